package permission

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// The harness that checks the judge against real bash. A line the judge
// calls read-only runs in bubblewrap: the whole file system read-only,
// except a throwaway work directory (/mnt/w, full of attacker-named files
// and a git repository, on a tmpfs /mnt that holds only it) and /tmp; no network (a fresh network namespace);
// all capabilities dropped. The line must then
//   - leave the work directory and /tmp as they were (content, modes, names): no write;
//   - make no system call fail with EROFS: no write attempt elsewhere;
//   - make no connect or sendto to an IP address: no connection attempt.
//
// The system calls are seen by strace -f -Z (only failed calls are
// printed; in the sandbox every write outside those two, and every IP
// connection, fails). strace is chosen over watching stderr because a
// program may swallow the error; bubblewrap because it makes every write
// outside the throwaway directories fail instead of happen. Without
// strace the harness falls back to the snapshots and stderr.
//
// Three writes of no consequence are left out, each a cache or an empty
// settings directory: .git/index (git status refreshes its stat cache),
// an empty $HOME/.config/procps (top creates it) and /var/cache/man (man,
// run by git help, caches formatted pages).

// fuzzWorkFiles are the files of the throwaway directory; their names are
// options of the programs the grammar uses.
var fuzzWorkFiles = []string{"a.txt", "b.txt", "-i", "--output=out", "-ofile", "--in-place", "-delete", "-f",
	"--exec=touch pwned", "-exec", "-fprint", "-w", "--files0-from=a.txt", "-e", "-v", "-n"}

// fuzzSandbox is a prepared harness.
type fuzzSandbox struct {
	template string // a populated work directory, copied for each run
	strace   string // path of strace, or ""
}

var (
	sandboxOnce sync.Once
	sandbox     *fuzzSandbox
	sandboxErr  error
)

// TestMain removes the harness's template directory after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if sandbox != nil {
		os.RemoveAll(filepath.Dir(sandbox.template))
	}
	os.Exit(code)
}

// sandboxFor prepares the harness once per test binary; it skips (or
// fails under CI=true) when bubblewrap cannot start.
func sandboxFor(t testing.TB) *fuzzSandbox {
	t.Helper()
	sandboxOnce.Do(func() { sandbox, sandboxErr = newFuzzSandbox() })
	if sandboxErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the bash harness is required under CI=true: %v", sandboxErr)
		}
		t.Skipf("skipping the comparison with bash: %v", sandboxErr)
	}
	return sandbox
}

func newFuzzSandbox() (*fuzzSandbox, error) {
	for _, tool := range []string{"bwrap", "bash", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%s is not installed: %w", tool, err)
		}
	}
	if out, err := exec.Command("bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
		"--unshare-net", "--cap-drop", "ALL", "true").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("bwrap cannot start: %v: %s", err, bytes.TrimSpace(out))
	}
	dir, err := os.MkdirTemp("", "dsh-perm-fuzz-")
	if err != nil {
		return nil, err
	}
	s := &fuzzSandbox{template: filepath.Join(dir, "w")}
	if p, err := exec.LookPath("strace"); err == nil {
		s.strace = p
	}
	if err := os.MkdirAll(filepath.Join(s.template, "sub"), 0o755); err != nil {
		return nil, err
	}
	for _, name := range fuzzWorkFiles {
		if err := os.WriteFile(filepath.Join(s.template, name), []byte("a\nb 2\n"+name+"\n"), 0o644); err != nil {
			return nil, err
		}
	}
	git := func(args ...string) error {
		cmd := exec.Command("git", args...)
		cmd.Dir = s.template
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %v: %s", args, err, out)
		}
		return nil
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "a.txt", "b.txt"}, {"commit", "-qm", "one"}} {
		if err := git(args...); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// fuzzOutcome is what a run of a line did.
type fuzzOutcome struct {
	violations []string
	timedOut   bool
	stderr     string
}

var (
	inetCall = regexp.MustCompile(`(connect|sendto|sendmsg)\([0-9]+, \{sa_family=AF_INET6?`)
	erofs    = regexp.MustCompile(`= -1 EROFS`)
)

// run runs line in a fresh copy of the work directory.
func (s *fuzzSandbox) run(t testing.TB, line string, timeout time.Duration) fuzzOutcome {
	t.Helper()
	root := t.TempDir()
	work, tmp, trace := filepath.Join(root, "w"), filepath.Join(root, "tmp"), filepath.Join(root, "trace")
	if out, err := exec.Command("cp", "-a", s.template, work).CombinedOutput(); err != nil {
		t.Fatalf("copy the work directory: %v: %s", err, out)
	}
	for _, d := range []string{tmp, trace} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	before := snapshot(t, work, tmp)
	args := []string{"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
		"--bind", tmp, "/tmp", "--tmpfs", "/mnt", "--bind", work, "/mnt/w", "--bind", trace, "/mnt/trace",
		"--unshare-net", "--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session",
		"--cap-drop", "ALL", "--chdir", "/mnt/w", "--clearenv",
		"--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--setenv", "HOME", "/mnt/w/sub", "--setenv", "LANG", "C",
		"--setenv", "GIT_CONFIG_GLOBAL", "/dev/null", "--"}
	if s.strace != "" {
		args = append(args, s.strace, "-f", "-qq", "-Z", "-o", "/mnt/trace/log")
	}
	args = append(args, "bash", "-c", line)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bwrap", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	_ = cmd.Run() // the line's own exit status does not matter
	out := fuzzOutcome{timedOut: ctx.Err() != nil, stderr: stderr.String()}
	if diff := snapshotDiff(before, snapshot(t, work, tmp)); diff != "" {
		out.violations = append(out.violations, "wrote: "+diff)
	}
	if log, err := os.ReadFile(filepath.Join(trace, "log")); err == nil {
		for _, l := range strings.Split(string(log), "\n") {
			switch {
			case erofs.MatchString(l) && !strings.Contains(l, "\"/var/cache/man/"):
				out.violations = append(out.violations, "tried to write: "+l)
			case inetCall.MatchString(l):
				out.violations = append(out.violations, "tried to connect: "+l)
			}
		}
	} else if s.strace != "" && !out.timedOut {
		t.Fatalf("strace wrote no log for %q: %v (stderr %q)", line, err, out.stderr)
	}
	if s.strace == "" && strings.Contains(out.stderr, "Read-only file system") {
		out.violations = append(out.violations, "tried to write: "+out.stderr)
	}
	return out
}

// snapshot records every entry under the roots: type, mode, content.
func snapshot(t testing.TB, roots ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(filepath.Dir(root), p)
			if rel == filepath.Join("w", ".git", "index") {
				return nil
			}
			if (rel == filepath.Join("w", "sub", ".config") || rel == filepath.Join("w", "sub", ".config", "procps")) && d.IsDir() && emptyOrOnly(p, "procps") {
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			v := fi.Mode().String()
			switch {
			case fi.Mode().IsRegular():
				data, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				v += fmt.Sprintf(" %x", sha256.Sum256(data))
			case fi.Mode()&fs.ModeSymlink != 0:
				target, _ := os.Readlink(p)
				v += " -> " + target
			}
			out[rel] = v
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("snapshot %s: %v", root, err)
		}
	}
	return out
}

// emptyOrOnly reports whether dir holds nothing but an empty directory
// named name.
func emptyOrOnly(dir, name string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) > 1 {
		return false
	}
	if len(entries) == 0 {
		return true
	}
	return entries[0].Name() == name && entries[0].IsDir() && emptyOrOnly(filepath.Join(dir, name), "")
}

func snapshotDiff(a, b map[string]string) string {
	var diffs []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			diffs = append(diffs, "removed "+k)
		} else if v != w {
			diffs = append(diffs, "changed "+k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			diffs = append(diffs, "created "+k)
		}
	}
	return strings.Join(diffs, ", ")
}

// The grammar of dangerous features. A line is one to three statements,
// each an optional setup, a command with words, and an optional
// redirection, joined by separators and possibly wrapped.
var (
	gramSetup = []string{"", "", "", "", "", "", "x='a[$(touch pwned)]'; ", "x=out; ", "x=--output=out; ", "x=-i; ",
		"set -k; ", "set -x; ", "PS4='$(touch pwned)' ", "shopt -s expand_aliases; alias cat='touch pwned'\n",
		"cd sub && cd ..; ", "OLDPWD=--output=out; ", "declare 'PS4=$(touch pwned)'; set -x; ", "IFS=/; ",
		"POSIXLY_CORRECT=1; ", "f() { touch pwned; }; ", "trap 'touch pwned' EXIT; "}
	gramProg = []string{"cat", "sort", "sed -n 1p", "sed", "head -1", "tail -1", "wc -l", "grep a", "git log --oneline",
		"git status --short", "git diff", "git show", "git config", "git branch", "git tag", "git notes", "git reflog",
		"git stash list", "git ls-files", "ls", "find .", "find", "awk 'NR > 1'", "awk", "uniq", "cut -c1", "tr a b",
		"xargs", "xargs -I{}", "echo", "printf '%s\\n'", "test", "[[", "read -r", "read", "stat", "du -s", "tar -tf",
		"diff", "nl", "od -c", "xxd", "tac", "rev", "base64", "md5sum", "true", "set", "declare", "export", "local",
		"cd", "pwd", "seq 3", "sleep 0", "date", "tree", "file", "column -t", "env", "timeout 5", "nice", "command",
		"bash -c", "sh -c", "bash -i -c", "bash -l -c", "eval", "unset", "let", "printf -v", "wait -p", "jq .", "yq",
		"go list", "gofmt -l", "rg a", "fd", "comm", "join", "paste", "strings", "hexdump -C", "iconv -l", "expr"}
	gramWord = []string{"a.txt", "b.txt", "a.txt", "b.txt", "sub", "-- a.txt", "*", "./*", "-- *", "~-", "~+", "/dev/fd/0", "/dev/stdout", "\"$x\"", "$x",
		"${x:=out}", "${!x}", "${x@P}", "$((x))", "\"${x:-'$(touch pwned)'}\"", "'a[$(touch pwned)]'", "-o out",
		"-i", "--output=out", "--in-place", "-delete", "-exec touch pwned \\;", "-exec sh -c 'touch {}' \\;",
		"-fprint out", "'1w out'", "'w out'", "-e 'w out'", "'{print > \"out\"}'", "'{print | \"sh\"}'",
		"'BEGIN{system(\"touch pwned\")}'", "-v 'a[$(touch pwned)]'", "'PS4=$(touch pwned)'", "'touch pwned'",
		"--upload-pack='touch pwned'", "--exec='touch pwned'", "-f", "--follow", "-w", "-n", "-1", "--", "x",
		"'s/a/b/w out'", "'s/a/b/e'", "-e", "-p", "-l", "--list", "new", "-c core.pager=x", "--get x.y",
		"x.y value", "--unset-a x.y", "-a", "-I", "-0", "\"$(echo a.txt)\"", "$(echo -i)", "`echo -o` out",
		"<(cat a.txt)", "{a,b}.txt", "'$(touch pwned)'", "\\$(touch pwned)", "-mod=mod", "-m -versions",
		"--process-slot-var=x", "-o", "-fout", "-C sub", "--output out", "-s", "-d", ":"}
	gramRedir = []string{"", "", "", "", "", "", "", "", "> out", ">> a.txt", "< a.txt", ">> /dev/fd/0", "> /dev/stdout",
		"< /dev/tcp/127.0.0.1/9", "<> out", "2>/dev/null", ">&2", "> /dev/null", "2>&1", "&> out", ">| out",
		"< \"$x\"", "3> out", "<<< 'a[$(touch pwned)]'", "<<EOF\n$(touch pwned)\nEOF\n", "<<'EOF'\nw out\nEOF\n"}
	gramSep  = []string{"; ", " && ", " | ", " | ", "; ", "\n", " # c \\\n", " || ", " & ", " |& "}
	gramWrap = []string{"%s", "%s", "%s", "echo $(%s)", "bash -c '%s'", "( %s )", "{ %s; }", "eval '%s'",
		"f() { %s; }; f", "for v in a; do %s; done", "if true; then %s; fi", "cat <<EOF\n$(%s)\nEOF",
		"echo \"$(%s)\"", "x=$(%s)", "while read -r l; do %s; done < a.txt", "! %s", "time %s", "%s &"}
)

// gramLine builds a command line from fuzz bytes.
func gramLine(b []byte) string {
	i := 0
	pick := func(list []string) string {
		n := 0
		if i < len(b) {
			n = int(b[i])
		}
		i++
		return list[n%len(list)]
	}
	count := func(n int) int {
		if i < len(b) {
			defer func() { i++ }()
			return int(b[i]) % n
		}
		return 0
	}
	stmts := 1 + count(3)
	var out strings.Builder
	for s := 0; s < stmts; s++ {
		if s > 0 {
			out.WriteString(pick(gramSep))
		}
		out.WriteString(pick(gramSetup))
		out.WriteString(pick(gramProg))
		for range count(4) {
			out.WriteString(" " + pick(gramWord))
		}
		if r := pick(gramRedir); r != "" {
			out.WriteString(" " + r)
		}
	}
	return fmt.Sprintf(pick(gramWrap), out.String())
}

// fuzzSeeds are the corpus run as a normal test: deterministic random
// lines from the grammar.
func fuzzSeeds() [][]byte {
	r := rand.New(rand.NewPCG(14, 2026))
	seeds := make([][]byte, 0, 1500)
	for range 1500 {
		b := make([]byte, 16)
		for k := range b {
			b[k] = byte(r.UintN(256))
		}
		seeds = append(seeds, b)
	}
	return seeds
}

// checkAgainstBash runs a line the judge calls read-only and fails on a
// write, a write attempt, a connection attempt, or a line the judge knows
// to end that does not.
func checkAgainstBash(t *testing.T, s *fuzzSandbox, line string) bool {
	if len(line) > 2000 {
		return false
	}
	an := Analyze(line)
	if !an.ReadOnly {
		return false
	}
	v := Judge(Request{Mode: ModeReadOnly, Command: line})
	timeout := 10 * time.Second
	if !v.Ends {
		timeout = 250 * time.Millisecond // not known to end: check what it does meanwhile
	}
	out := s.run(t, line, timeout)
	for _, viol := range out.violations {
		t.Errorf("the judge calls %q read-only, but bash %s", line, viol)
	}
	if out.timedOut && v.Ends {
		t.Errorf("the judge knows %q ends, but bash ran it for 10s", line)
	}
	return true
}

func FuzzJudgeAgainstBash(f *testing.F) {
	for _, seed := range fuzzSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		line := gramLine(b)
		if !Analyze(line).ReadOnly {
			return
		}
		s := sandboxFor(t)
		t.Parallel()
		checkAgainstBash(t, s, line)
	})
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// TestTableLinesAgainstBash runs the lines of the class tables that the
// judge calls read-only, the harmless list included, through the same
// harness.
func TestTableLinesAgainstBash(t *testing.T) {
	s := sandboxFor(t)
	seen := map[string]bool{}
	lines := slicesClone(harmless)
	for _, cases := range classes {
		for _, c := range cases {
			lines = append(lines, c.cmd)
		}
	}
	for _, line := range lines {
		if seen[line] || !Analyze(line).ReadOnly || !Judge(Request{Command: line}).Ends {
			continue // the grammar covers lines that never end
		}
		seen[line] = true
		t.Run(line, func(t *testing.T) {
			t.Parallel()
			checkAgainstBash(t, s, line)
		})
	}
	t.Logf("running %d read-only table lines in bash", len(seen))
}
