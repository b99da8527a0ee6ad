package ssh

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/sshdtest"
)

// remoteUsers are the users the protection tests log in as: the one
// running the tests, and (when that is root) nobody, through an sshd that
// gives nobody a bash and a home (sshdtest.Options.Nobody).
func remoteUsers(t *testing.T) []bool {
	if os.Geteuid() == 0 {
		return []bool{false, true}
	}
	return []bool{false}
}

// protHost is one sshd and executor for the protection tests, with a
// tree under /var/tmp the remote user owns: ws (the workspace, a git
// repository with a nested one, the home inside it), second (an
// additional directory without a repository) and flags (outside both).
type protHost struct {
	t                       *testing.T
	e                       *Executor
	cfg                     Config
	root, ws, second, flags string
	uid                     int // the remote user's, -1 for the test's own
}

func newProtHost(t *testing.T, nobody bool) *protHost {
	t.Helper()
	root := remoteSandboxRoot(t, "dsh-ssh-prot-")
	h := &protHost{t: t, root: root, ws: filepath.Join(root, "ws"), second: filepath.Join(root, "second"), flags: filepath.Join(root, "flags"), uid: -1}
	for _, d := range []string{h.ws, h.second, h.flags, filepath.Join(h.ws, "home"), filepath.Join(root, "state")} {
		must(t, os.MkdirAll(d, 0o755))
	}
	h.git(h.ws, "init", "-q")
	must(t, os.WriteFile(filepath.Join(h.ws, "file.txt"), []byte("one\n"), 0o644))
	h.git(h.ws, "add", "file.txt")
	h.git(h.ws, "commit", "-qm", "one")
	h.git(h.ws, "config", "core.hooksPath", ".husky/_")
	nested := filepath.Join(h.ws, "vendor", "lib")
	must(t, os.MkdirAll(nested, 0o755))
	h.git(nested, "init", "-q")
	// A checkout whose .git is a file naming a git directory elsewhere in
	// the workspace.
	must(t, os.MkdirAll(filepath.Join(h.ws, "gitdirs"), 0o755))
	h.git(h.ws, "init", "-q", "--separate-git-dir="+filepath.Join(h.ws, "gitdirs", "wt"), filepath.Join(h.ws, "wt"))
	for _, d := range []string{filepath.Join(h.ws, ".git", "hooks"), filepath.Join(nested, ".git", "hooks"), filepath.Join(h.ws, "gitdirs", "wt", "hooks")} {
		must(t, os.RemoveAll(d))
	}
	opts := sshdtest.Options{SetEnv: []string{"HOME=" + filepath.Join(h.ws, "home")}, Nobody: nobody}
	if nobody {
		h.uid = sshdtest.NobodyUID
		must(t, os.Chmod(root, 0o755))
		must(t, filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, h.uid, h.uid)
		}))
	}
	srv := sshdtest.StartWith(t, opts)
	h.cfg = testConfig(t, srv)
	h.cfg.RemoteStateDir = filepath.Join(root, "state")
	h.cfg.Engine.Grace = 5 * time.Second // testTermInSetup's TERM must not turn into a KILL
	h.e = newTestExecutor(t, h.cfg)
	return h
}

// git runs git on the host in dir, as the test (outside every sandbox).
func (h *protHost) git(dir string, args ...string) string {
	h.t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "safe.directory=*", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+h.root)
	out, err := cmd.CombinedOutput()
	if err != nil {
		h.t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return string(out)
}

// spec resolves cmd at workspace in ws, with second as an additional
// directory.
func (h *protHost) spec(cmd string) executor.Spec {
	h.t.Helper()
	spec, err := h.e.Resolve(executor.Request{Command: cmd, SessionCwd: h.ws, Level: executor.LevelWorkspace, Roots: []string{h.second}})
	if err != nil {
		h.t.Fatal(err)
	}
	return spec
}

func (h *protHost) run(cmd string) executor.Result {
	h.t.Helper()
	return h.runSpec(h.spec(cmd), nil)
}

func (h *protHost) runSpec(spec executor.Spec, observe func(executor.Chunk)) executor.Result {
	h.t.Helper()
	res, err := h.e.Run(context.Background(), spec, observe)
	if err != nil {
		h.t.Fatalf("run %q: %v", spec.Command, err)
	}
	return res
}

// listing is every path below the workspace and the additional directory
// with its kind, sorted.
func (h *protHost) listing() []string {
	h.t.Helper()
	var out []string
	for _, top := range []string{h.ws, h.second} {
		must(h.t, filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			out = append(out, p+" "+d.Type().String())
			return nil
		}))
	}
	slices.Sort(out)
	return out
}

// sameListing fails the test with the paths added and removed since
// before.
func (h *protHost) sameListing(what string, before []string) {
	h.t.Helper()
	after := h.listing()
	var added, removed []string
	for _, p := range after {
		if !slices.Contains(before, p) {
			added = append(added, p)
		}
	}
	for _, p := range before {
		if !slices.Contains(after, p) {
			removed = append(removed, p)
		}
	}
	if len(added)+len(removed) > 0 {
		h.t.Errorf("%s: the host's tree changed: added %q, removed %q", what, added, removed)
	}
}

// waitFor polls cond for up to 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRemoteProtection: at workspace on a host with bubblewrap, as root
// and as nobody, judged on the host:
//   - absent protected names cannot be created (a hooks directory the
//     repository lacks, .vscode/.zed files, .envrc, AGENTS.md, .mcp.json,
//     .dsh-acp, the configured hooks path .husky/_, a nested repository's
//     hooks and config, the hooks and config of the git directory a .git
//     file names (which cannot be renamed either), a .git in an additional
//     directory without one, the home's rc files when the home is inside
//     the workspace), and no placeholder is left: the tree's listing is the
//     same afterwards;
//   - renaming .git away and planting core.fsmonitor in a copy does not
//     make the user's next real `git status` run the plant;
//   - git add, commit, branch, stash, checkout and rebase still work;
//   - git init is refused without Spec.AllowNewRepository and goes through
//     with it;
//   - a command stopped by TERM (the engine's stop) gets the TERM, exits as
//     it chooses, and its placeholders are removed;
//   - a TERM that lands while the wrapper waits for the registry's lock:
//     the wrapper finishes its set-up, removes its placeholders, dies by
//     TERM, and the command never runs;
//   - a SIGKILLed command's placeholders are removed by the next command;
//   - of two concurrent commands, the first one's end does not free .envrc
//     for the second;
//   - another session's workspace inside this one cannot be renamed away
//     and replaced by a symlink out (its next write lands where it was),
//     and a workspace reached through a symlink inside another session's
//     is refused;
//   - a dead owner's record is swept: a placeholder it made is removed
//     (one recorded before its inode was known too), a user's entry at a
//     recorded name (another inode, or no longer empty) is left alone;
//   - the remote state directory is hidden (the registry, the
//     supervisor's files, other sessions' spill files), except the
//     session's own spill directory, readable.
func TestRemoteProtection(t *testing.T) {
	for _, nobody := range remoteUsers(t) {
		name := "self"
		if nobody {
			name = "nobody"
		}
		t.Run(name, func(t *testing.T) {
			h := newProtHost(t, nobody)
			t.Run("absent names", h.testAbsentNames)
			t.Run("rename parent", h.testRenameParent)
			t.Run("git work", h.testGitWork)
			t.Run("new repository", h.testNewRepository)
			t.Run("terminated", h.testTerminated)
			t.Run("terminated in set-up", h.testTermInSetup)
			t.Run("killed", h.testKilled)
			t.Run("dead records", h.testDeadRecords)
			t.Run("other sessions", h.testOtherSessions)
			t.Run("state hidden", h.testStateHidden)
			t.Run("concurrent", h.testConcurrent)
		})
	}
}

func (h *protHost) testAbsentNames(t *testing.T) {
	h.t = t
	configs := map[string][]byte{}
	for _, c := range []string{filepath.Join(h.ws, "vendor", "lib", ".git", "config"), filepath.Join(h.ws, "gitdirs", "wt", "config")} {
		configs[c], _ = os.ReadFile(c)
	}
	before := h.listing()
	attacks := []string{
		"mkdir -p .git/hooks && printf '#!/bin/sh\\necho planted\\n' > .git/hooks/pre-commit",
		"mkdir -p .vscode && echo '{}' > .vscode/tasks.json",
		"mkdir -p .zed && echo '{}' > .zed/settings.json",
		"echo 'echo planted' > .envrc", "echo planted > AGENTS.md", "echo '{}' > .mcp.json",
		"mkdir -p .dsh-acp && echo '{}' > .dsh-acp/permissions.json",
		"mkdir -p .husky/_ && echo planted > .husky/_/pre-commit",
		"mkdir -p vendor/lib/.git/hooks && echo planted > vendor/lib/.git/hooks/pre-commit",
		"echo '[core] fsmonitor = planted' >> vendor/lib/.git/config",
		"mkdir -p gitdirs/wt/hooks && echo planted > gitdirs/wt/hooks/pre-commit",
		"echo '[core] fsmonitor = planted' >> gitdirs/wt/config", "mv gitdirs/wt gitdirs/moved",
		"mkdir -p " + h.second + "/.git && echo planted > " + h.second + "/.git/config",
		"echo planted > home/.bashrc", "mkdir -p home/.config/git && echo planted > home/.config/git/config",
		"mkdir -p home/.local/bin && echo planted > home/.local/bin/git",
	}
	res := h.run(strings.Join(attacks, " 2>/dev/null; ") + " 2>/dev/null; echo done")
	if !strings.Contains(string(res.Stdout), "done") {
		t.Fatalf("the command did not run: %q", res.Combined)
	}
	h.sameListing("absent protected names", before)
	for c, was := range configs {
		if got, _ := os.ReadFile(c); string(got) != string(was) {
			t.Errorf("%s is now %q", c, got)
		}
	}
}

func (h *protHost) testRenameParent(t *testing.T) {
	h.t = t
	plant := filepath.Join(h.flags, "PLANT")
	res := h.run("mv .git .g && cp -r .g .git && git config core.fsmonitor 'touch " + plant + "'; echo status $?")
	h.git(h.ws, "status")
	if exists(plant) {
		t.Errorf("the user's git status ran the plant: %q", res.Combined)
	}
	if exists(filepath.Join(h.ws, ".g")) {
		t.Errorf(".git was renamed on the host: %q", res.Combined)
	}
}

func (h *protHost) testGitWork(t *testing.T) {
	h.t = t
	status := h.git(h.ws, "status", "--porcelain")
	script := `set -e; export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t
m=$(git symbolic-ref --short HEAD)
git branch side; git checkout -q side; echo side > side.txt; git add side.txt; git commit -qm side
git checkout -q "$m"; echo two >> file.txt; git add file.txt; git commit -qm two
git checkout -q side; git rebase -q "$m"
echo wip >> file.txt; git stash -q; git stash pop -q; git checkout -q -- file.txt
git checkout -q "$m"; git branch -q -D side; git reset -q --hard HEAD~1; echo ok`
	if res := h.run(script); !strings.HasSuffix(string(res.Stdout), "ok\n") {
		t.Fatalf("git work at workspace failed: exit %d: %q", res.ExitCode, res.Combined)
	}
	if st := h.git(h.ws, "status", "--porcelain"); st != status {
		t.Errorf("after git work the host's git status is %q, was %q", st, status)
	}
}

func (h *protHost) testNewRepository(t *testing.T) {
	h.t = t
	dir := filepath.Join(h.root, "fresh")
	must(t, os.Mkdir(dir, 0o755))
	if h.uid >= 0 {
		must(t, os.Chown(dir, h.uid, h.uid))
	}
	spec, err := h.e.Resolve(executor.Request{Command: "git init -q . 2>&1; echo $?", SessionCwd: dir, Level: executor.LevelWorkspace})
	must(t, err)
	res := h.runSpec(spec, nil)
	if exists(filepath.Join(dir, ".git")) {
		t.Errorf("git init without AllowNewRepository made a repository: %q", res.Combined)
	}
	spec.AllowNewRepository = true
	res = h.runSpec(spec, nil)
	if !exists(filepath.Join(dir, ".git", "HEAD")) {
		t.Errorf("git init with AllowNewRepository made no repository: %q", res.Combined)
	}
}

// wrapperPid is the pid of the one wrapper recorded in the registry.
func (h *protHost) wrapperPid() int {
	h.t.Helper()
	files, _ := filepath.Glob(filepath.Join(h.cfg.RemoteStateDir, "placeholders", "o-*"))
	if len(files) != 1 {
		h.t.Fatalf("records: %q", files)
	}
	var pid int
	for _, c := range strings.TrimPrefix(filepath.Base(files[0]), "o-") {
		if c < '0' || c > '9' {
			break
		}
		pid = pid*10 + int(c-'0')
	}
	return pid
}

func (h *protHost) testKilled(t *testing.T) {
	h.t = t
	before := h.listing()
	envrc := filepath.Join(h.ws, ".envrc")
	ready, done := h.startRun(context.Background(), h.spec("echo ready; sleep 30"))
	select {
	case <-ready:
	case res := <-done:
		t.Fatalf("the command ended early: %q", res.Combined)
	}
	if !exists(envrc) {
		t.Fatal("no placeholder for .envrc while the command runs")
	}
	pid := h.wrapperPid()
	must(t, syscall.Kill(-pid, syscall.SIGKILL))
	<-done
	if !exists(envrc) {
		t.Fatal("the placeholder went with the killed command (the test needs it left behind)")
	}
	h.run("true")
	h.sameListing("after a killed command and the next one", before)
}

func (h *protHost) testConcurrent(t *testing.T) {
	h.t = t
	before := h.listing()
	goA, goB := filepath.Join(h.flags, "go-a"), filepath.Join(h.flags, "go-b")
	wait := func(flag string) string {
		return "echo ready; while [ ! -e " + flag + " ]; do sleep 0.02; done; "
	}
	readyA, doneA := h.startRun(context.Background(), h.spec(wait(goA)+"true"))
	<-readyA
	readyB, doneB := h.startRun(context.Background(), h.spec(wait(goB)+"echo planted > .envrc && echo CREATED; true"))
	<-readyB
	must(t, os.WriteFile(goA, nil, 0o644))
	<-doneA
	must(t, os.WriteFile(goB, nil, 0o644))
	res := <-doneB
	if strings.Contains(string(res.Stdout), "CREATED") || exists(filepath.Join(h.ws, ".envrc")) {
		t.Errorf("the second command created .envrc after the first ended: %q", res.Combined)
	}
	h.sameListing("after two concurrent commands", before)
}

// startRun runs spec in the background; ready is signalled when its output
// says "ready".
func (h *protHost) startRun(ctx context.Context, spec executor.Spec) (ready chan struct{}, done chan executor.Result) {
	ready, done = make(chan struct{}, 1), make(chan executor.Result, 1)
	go func() {
		res, _ := h.e.Run(ctx, spec, func(c executor.Chunk) {
			if strings.Contains(string(c.Data), "ready") {
				select {
				case ready <- struct{}{}:
				default:
				}
			}
		})
		done <- res
	}()
	return ready, done
}

func (h *protHost) testTerminated(t *testing.T) {
	h.t = t
	before := h.listing()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready, done := h.startRun(ctx, h.spec("trap 'echo got-term; exit 7' TERM; echo ready; sleep 30 & wait"))
	select {
	case <-ready:
	case res := <-done:
		t.Fatalf("the command ended early: %q", res.Combined)
	}
	if !exists(filepath.Join(h.ws, ".envrc")) {
		t.Fatal("no placeholder for .envrc while the command runs")
	}
	cancel() // the engine's stop: TERM, grace, KILL
	res := <-done
	if res.ExitCode != 7 || !strings.Contains(string(res.Stdout), "got-term") {
		t.Errorf("stopped: exit %d signal %q output %q; want the command's own exit 7 after its TERM trap", res.ExitCode, res.Signal, res.Combined)
	}
	h.sameListing("after a stopped command", before)
}

func (h *protHost) testStateHidden(t *testing.T) {
	h.t = t
	state := h.cfg.RemoteStateDir
	mine, theirs := filepath.Join(state, "spill", ownerDirName(""), "mine.log"), filepath.Join(state, "spill", "o-other", "theirs.log")
	for _, f := range []string{mine, theirs} {
		must(t, os.MkdirAll(filepath.Dir(f), 0o700))
		must(t, os.WriteFile(f, []byte("content of "+filepath.Base(f)+"\n"), 0o600))
		if h.uid >= 0 {
			must(t, os.Chown(filepath.Dir(f), h.uid, h.uid))
			must(t, os.Chown(f, h.uid, h.uid))
		}
	}
	for _, level := range []executor.Level{executor.LevelWorkspace, executor.LevelReadOnly} {
		res := runIn(t, h.e, h.ws, level, nil, "cat "+mine+" "+theirs+"; ls -A "+state+"/placeholders "+state+"; echo >> "+mine+"; true")
		out := string(res.Combined)
		if !strings.Contains(out, "content of mine.log") || strings.Contains(out, "content of theirs.log") ||
			strings.Contains(out, "lock") || strings.Contains(out, ".groups") {
			t.Errorf("%s: the state directory as the command sees it: %q", level, out)
		}
		if b, _ := os.ReadFile(mine); string(b) != "content of mine.log\n" {
			t.Errorf("%s: the session's spill file was written: %q", level, b)
		}
	}
}

func (h *protHost) testDeadRecords(t *testing.T) {
	h.t = t
	zed, idea, vscode := filepath.Join(h.ws, ".zed"), filepath.Join(h.ws, ".idea"), filepath.Join(h.ws, ".vscode")
	for _, d := range []string{zed, idea, vscode} {
		must(t, os.Mkdir(d, 0o755))
	}
	must(t, os.WriteFile(filepath.Join(vscode, "tasks.json"), []byte("{}"), 0o644))
	var st syscall.Stat_t
	must(t, syscall.Stat(vscode, &st))
	// A pid that cannot run (above pid_max), so the owner is dead.
	rec := strings.Join([]string{
		"-\x1f-\x1fd\x1f0\x1f" + zed,                                    // made before its inode was known
		"1\x1f2\x1fd\x1f0\x1f" + idea,                                   // another inode: the user's now
		fmt.Sprintf("%d\x1f%d\x1fd\x1f0\x1f%s", st.Dev, st.Ino, vscode), // no longer empty
	}, "\n") + "\n"
	dir := filepath.Join(h.cfg.RemoteStateDir, "placeholders")
	must(t, os.MkdirAll(dir, 0o700))
	must(t, os.WriteFile(filepath.Join(dir, "o-99999999-1"), []byte(rec), 0o600))
	if h.uid >= 0 {
		for _, p := range []string{dir, filepath.Join(dir, "o-99999999-1"), zed, idea, vscode, filepath.Join(vscode, "tasks.json")} {
			must(t, os.Chown(p, h.uid, h.uid))
		}
	}
	h.run("true")
	if exists(zed) {
		t.Error("a dead owner's placeholder (recorded before its inode) was not swept")
	}
	if !exists(idea) || !exists(filepath.Join(vscode, "tasks.json")) {
		t.Error("the sweep removed an entry that was not the placeholder recorded")
	}
	if exists(filepath.Join(dir, "o-99999999-1")) {
		t.Error("the dead owner's record is still there")
	}
	must(t, os.RemoveAll(idea))
	must(t, os.RemoveAll(vscode))
}

func (h *protHost) testTermInSetup(t *testing.T) {
	h.t = t
	before := h.listing()
	lock := filepath.Join(h.cfg.RemoteStateDir, "placeholders", "lock")
	must(t, os.MkdirAll(filepath.Dir(lock), 0o700))
	f, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE, 0o600)
	must(t, err)
	defer f.Close()
	if h.uid >= 0 {
		must(t, os.Chown(filepath.Dir(lock), h.uid, h.uid))
		must(t, os.Chown(lock, h.uid, h.uid))
	}
	must(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
	ran := filepath.Join(h.ws, "ran")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, done := h.startRun(ctx, h.spec("touch "+ran))
	waitFor(t, "the wrapper waiting for the lock", flockWaiting)
	cancel() // the engine's TERM reaches the group while the wrapper waits
	time.Sleep(100 * time.Millisecond)
	must(t, syscall.Flock(int(f.Fd()), syscall.LOCK_UN))
	res := <-done
	if exists(ran) {
		t.Errorf("the command ran after a TERM that landed before it started: %+v", res)
	}
	if res.Signal != "SIGTERM" {
		t.Errorf("a TERM before the launch: exit %d signal %q; want the wrapper's death by TERM", res.ExitCode, res.Signal)
	}
	h.sameListing("after a TERM in the set-up", before)
}

// flockWaiting reports whether a flock(1) process runs (the wrapper's,
// waiting for the registry's lock).
func flockWaiting() bool {
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err == nil && strings.HasPrefix(string(b), "flock\x00-w\x00") {
			return true
		}
	}
	return false
}

func (h *protHost) testOtherSessions(t *testing.T) {
	h.t = t
	a, outside := filepath.Join(h.root, "multi"), filepath.Join(h.root, "outside")
	b := filepath.Join(a, "sub")
	for _, d := range []string{b, outside} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.Symlink(outside, filepath.Join(a, "link")))
	if h.uid >= 0 {
		for _, p := range []string{a, b, outside, filepath.Join(a, "link")} {
			must(t, os.Lchown(p, h.uid, h.uid))
		}
	}
	runIn(t, h.e, b, executor.LevelWorkspace, nil, "true") // session B is known
	res := runIn(t, h.e, a, executor.LevelWorkspace, nil, "mv sub sub2 && ln -s "+outside+" sub; echo $?")
	runIn(t, h.e, b, executor.LevelWorkspace, nil, "echo x > f")
	if exists(filepath.Join(outside, "f")) || !exists(filepath.Join(b, "f")) {
		t.Errorf("session A replaced session B's workspace by a symlink out (%q): B's write went outside", res.Combined)
	}
	res = runIn(t, h.e, filepath.Join(a, "link"), executor.LevelWorkspace, nil, "echo y > g")
	if res.ExitCode != 126 || !strings.Contains(string(res.Combined), "leads through the symlink") || exists(filepath.Join(outside, "g")) {
		t.Errorf("a workspace through a symlink inside another session's: exit %d %q", res.ExitCode, res.Combined)
	}
}
