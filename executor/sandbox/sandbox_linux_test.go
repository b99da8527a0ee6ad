package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/local"
)

// visibleDir makes a directory outside /tmp (which is private in a
// sandbox), so a test can check what a sandbox sees of its siblings.
func visibleDir(t *testing.T) string {
	t.Helper()
	base := "/var/tmp"
	if !isDir(base) {
		t.Skipf("%s does not exist: no directory a sandbox shows besides its workspace", base)
	}
	dir, err := os.MkdirTemp(base, "dsh-sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	dir, _ = filepath.EvalSymlinks(dir)
	return dir
}

func mkdir(t *testing.T, path string) string {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestWorkspaceWrites(t *testing.T) {
	requireBwrap(t)
	e := newTestExecutor(t, Config{})
	base := visibleDir(t)
	ws, sibling := mkdir(t, filepath.Join(base, "ws")), mkdir(t, filepath.Join(base, "sibling"))
	tests := []struct {
		level   executor.Level
		command string
		ok      bool
		host    string // a file that must (ok) or must not exist on the host afterwards
	}{
		{executor.LevelWorkspace, "echo x > in-cwd", true, filepath.Join(ws, "in-cwd")},
		{executor.LevelWorkspace, "mkdir -p sub/deeper && echo x > sub/deeper/f", true, filepath.Join(ws, "sub/deeper/f")},
		{executor.LevelWorkspace, "touch /etc/dsh-sandbox-x", false, "/etc/dsh-sandbox-x"},
		{executor.LevelWorkspace, "touch ~/x", false, ""},
		{executor.LevelWorkspace, "echo x > ../sibling/f", false, filepath.Join(sibling, "f")},
		{executor.LevelWorkspaceNetwork, "echo x > in-cwd-net", true, filepath.Join(ws, "in-cwd-net")},
		{executor.LevelWorkspaceNetwork, "echo x > ../sibling/g", false, filepath.Join(sibling, "g")},
		{executor.LevelReadOnly, "echo x > ro-cwd", false, filepath.Join(ws, "ro-cwd")},
		{executor.LevelReadOnly, "touch ~/x", false, ""},
		{executor.LevelOff, "echo x > ../sibling/off", true, filepath.Join(sibling, "off")},
	}
	for _, tc := range tests {
		res := run(t, e, tc.level, ws, tc.command)
		if ok := res.ExitCode == 0; ok != tc.ok {
			t.Errorf("%s: %q exited %d (stderr %q), want success %v", tc.level, tc.command, res.ExitCode, res.Stderr, tc.ok)
		}
		if tc.host == "" {
			continue
		}
		if _, err := os.Stat(tc.host); (err == nil) != tc.ok {
			t.Errorf("%s: %q: host file %s exists=%v, want %v", tc.level, tc.command, tc.host, err == nil, tc.ok)
		}
	}
	res := run(t, e, executor.LevelWorkspace, ws, `touch "$HOME/x" 2>&1; echo "$HOME"`)
	if !strings.Contains(string(res.Stdout), "Read-only file system") {
		t.Errorf("touch ~/x: %q, want a read-only file system error", res.Stdout)
	}
}

// TestHomeOutsideBaseMounts: a home the bind of / shows (not below /tmp
// or /run, so it gets no mount of its own) is read-only, its ~/.cache is
// throwaway space and its hidden files stay unreadable, at both writable
// and read-only levels.
func TestHomeOutsideBaseMounts(t *testing.T) {
	requireBwrap(t)
	home := mkdir(t, filepath.Join(visibleDir(t), "home"))
	mkdir(t, filepath.Join(home, ".cache"))
	writeFile(t, filepath.Join(home, ".netrc"), "machine x password secret\n")
	e := newTestExecutor(t, Config{Home: home})
	ws := tempDir(t)
	for _, level := range []executor.Level{executor.LevelReadOnly, executor.LevelWorkspace} {
		res := run(t, e, level, ws, `touch ~/x 2>&1; echo c > ~/.cache/c && cat ~/.cache/c; cat ~/.netrc 2>/dev/null || echo hidden`)
		if out := string(res.Stdout); !strings.Contains(out, "Read-only file system") || !strings.HasSuffix(out, "c\nhidden\n") {
			t.Errorf("%s: %q (stderr %q): want ~ read-only, ~/.cache writable, ~/.netrc hidden", level, out, res.Stderr)
		}
		for _, f := range []string{"x", ".cache/c"} {
			if _, err := os.Stat(filepath.Join(home, f)); err == nil {
				t.Errorf("%s: ~/%s reached the host", level, f)
			}
		}
	}
}

func TestThrowawaySpace(t *testing.T) {
	requireBwrap(t)
	home := testHome(t)
	e := newTestExecutor(t, Config{Home: home})
	ws := tempDir(t)
	for _, level := range []executor.Level{executor.LevelReadOnly, executor.LevelWorkspace} {
		res := run(t, e, level, ws, `echo a > /tmp/t && echo b > ~/.cache/c && cat /tmp/t ~/.cache/c && echo "$TMPDIR"`)
		if string(res.Stdout) != "a\nb\n/tmp\n" {
			t.Errorf("%s: %q (stderr %q): /tmp and ~/.cache must be writable", level, res.Stdout, res.Stderr)
		}
		if _, err := os.Stat(filepath.Join(home, ".cache", "c")); err == nil {
			t.Errorf("%s: a write to ~/.cache reached the host", level)
		}
		res = run(t, e, level, ws, `cat /tmp/t ~/.cache/c 2>/dev/null || echo gone`)
		if string(res.Stdout) != "gone\n" {
			t.Errorf("%s: throwaway space outlived its command: %q", level, res.Stdout)
		}
	}
}

func TestHiddenPaths(t *testing.T) {
	requireBwrap(t)
	home := testHome(t)
	const key = "-----BEGIN OPENSSH PRIVATE KEY-----\nplanted\n"
	mkdir(t, filepath.Join(home, ".ssh"))
	mkdir(t, filepath.Join(home, ".config", "gh"))
	for path, data := range map[string]string{
		".ssh/id_rsa": key, ".netrc": "machine x login y password planted\n", ".config/gh/hosts.yml": "oauth_token: planted\n",
	} {
		if err := os.WriteFile(filepath.Join(home, path), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	state := visibleDir(t) // outside /tmp: only the hiding keeps it from view
	e := newTestExecutor(t, Config{Config: local.Config{StateDir: state}, Home: home})
	if err := os.WriteFile(filepath.Join(state, "journal.jsonl"), []byte("planted journal\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ws := tempDir(t)
	// The workspace may even be HOME itself: the hidden paths stay hidden.
	for _, cwd := range []string{ws, home} {
		for _, level := range []executor.Level{executor.LevelReadOnly, executor.LevelWorkspace, executor.LevelWorkspaceNetwork} {
			res := run(t, e, level, cwd, `cat ~/.ssh/id_rsa ~/.netrc ~/.config/gh/hosts.yml 2>&1; ls -A ~/.ssh; cat `+state+`/journal.jsonl 2>&1; echo end`)
			if !strings.Contains(string(res.Stdout), "journal.jsonl: No such file") {
				t.Errorf("%s in %s: the state directory is not hidden: %q", level, cwd, res.Stdout)
			}
			if strings.Contains(string(res.Stdout), "planted") || !strings.HasSuffix(string(res.Stdout), "end\n") {
				t.Errorf("%s in %s: a hidden file showed: %q", level, cwd, res.Stdout)
			}
			res = run(t, e, level, cwd, `echo x > ~/.ssh/authorized_keys 2>/dev/null && echo wrote`)
			if strings.Contains(string(res.Stdout), "wrote") {
				t.Errorf("%s in %s: wrote into a hidden directory", level, cwd)
			}
		}
	}
	if got, _ := os.ReadFile(filepath.Join(home, ".ssh/id_rsa")); string(got) != key {
		t.Error("the planted key changed")
	}
	res := run(t, e, executor.LevelOff, ws, "cat ~/.ssh/id_rsa")
	if !strings.Contains(string(res.Stdout), "planted") {
		t.Errorf("control: at level off the planted key should be readable, got %q", res.Stdout)
	}
}

// TestSpillVisible: the complete output of an earlier call stays readable
// at the path its result names, read-only; other owners' spills do not.
func TestSpillVisible(t *testing.T) {
	requireBwrap(t)
	e := newTestExecutor(t, Config{})
	ws := tempDir(t)
	spill := func(owner string) string {
		spec, _ := e.Resolve(executor.Request{Command: "seq 1 200000", SessionCwd: ws, Owner: owner})
		res, err := e.Run(context.Background(), spec, nil)
		if err != nil || res.SpillPath == "" {
			t.Fatalf("no spill: %v %+v", err, res.SpillPath)
		}
		return res.SpillPath
	}
	mine, theirs := spill("alice"), spill("bob")
	spec, _ := e.Resolve(executor.Request{SessionCwd: ws, Owner: "alice",
		Command: fmt.Sprintf("tail -n 1 %s; cat %s 2>/dev/null | head -c 10 || true; echo x >> %s 2>/dev/null && echo appended", mine, theirs, mine)})
	res, err := e.Run(context.Background(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != "200000\n" {
		t.Errorf("got %q (stderr %q): want the own spill readable, another's hidden, nothing writable", res.Stdout, res.Stderr)
	}
}

func TestProtectedInWorkspace(t *testing.T) {
	requireBwrap(t)
	e := newTestExecutor(t, Config{})
	ws := tempDir(t)
	mkdir(t, filepath.Join(ws, ".git", "hooks"))
	if err := os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := run(t, e, executor.LevelWorkspace, ws, `echo evil > .git/hooks/pre-commit; echo "fsmonitor = evil" >> .git/config; echo ok > .git/HEAD && cat .git/HEAD`)
	if string(res.Stdout) != "ok\n" {
		t.Errorf("stdout %q: .git stays writable except hooks and config", res.Stdout)
	}
	if _, err := os.Stat(filepath.Join(ws, ".git", "hooks", "pre-commit")); err == nil {
		t.Error("a hook was planted")
	}
	if got, _ := os.ReadFile(filepath.Join(ws, ".git", "config")); string(got) != "[core]\n" {
		t.Errorf(".git/config changed: %q", got)
	}
}

func TestNetwork(t *testing.T) {
	requireBwrap(t)
	e := newTestExecutor(t, Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			line, _ := bufio.NewReader(c).ReadString('\n')
			got <- line
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	cmd := fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d && echo "sent-$0" >&3 && echo connected`, port)
	ws := tempDir(t)
	for _, tc := range []struct {
		level executor.Level
		ok    bool
	}{
		{executor.LevelReadOnly, false}, {executor.LevelWorkspace, false},
		{executor.LevelWorkspaceNetwork, true}, {executor.LevelOff, true},
	} {
		res := run(t, e, tc.level, ws, cmd)
		if connected := string(res.Stdout) == "connected\n"; connected != tc.ok {
			t.Errorf("%s: stdout %q stderr %q; want connected %v", tc.level, res.Stdout, res.Stderr, tc.ok)
		}
		if tc.ok {
			select {
			case line := <-got:
				if line != "sent-bash\n" {
					t.Errorf("%s: listener got %q", tc.level, line)
				}
			case <-time.After(5 * time.Second):
				t.Errorf("%s: the listener received nothing", tc.level)
			}
		}
	}
	select {
	case line := <-got:
		t.Errorf("a confined level without network reached the listener: %q", line)
	default:
	}
}

// TestFailClosed: an explicit level with bubblewrap missing refuses every
// confined command with a clear error; off still runs; the default level
// stays the explicit one.
func TestFailClosed(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir() // bash, and no bwrap
	if err := os.Symlink(bash, filepath.Join(bin, "bash")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	e, err := New(Config{Config: local.Config{StateDir: t.TempDir()}, Home: testHome(t), Level: executor.LevelWorkspace})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	if e.DefaultLevel() != executor.LevelWorkspace || !slices.Equal(e.Levels(), []executor.Level{executor.LevelOff}) {
		t.Errorf("default %s levels %v; want the explicit workspace default and only off offered", e.DefaultLevel(), e.Levels())
	}
	why := e.Unavailable()
	if !errors.Is(why, executor.ErrSandbox) || !strings.Contains(why.Error(), "bwrap") {
		t.Errorf("Unavailable() = %v; want ErrSandbox naming bwrap", why)
	}
	ws := tempDir(t)
	marker := filepath.Join(ws, "ran")
	spec, err := e.Resolve(executor.Request{Command: "touch " + marker, SessionCwd: ws})
	if err != nil {
		t.Fatal(err)
	}
	_, runErr := e.Run(context.Background(), spec, nil)
	_, startErr := e.Start(spec)
	for _, err := range []error{runErr, startErr} {
		if !errors.Is(err, executor.ErrSandbox) || !strings.Contains(err.Error(), "not found") || !strings.Contains(err.Error(), "workspace") {
			t.Errorf("error %v; want ErrSandbox saying the level and that bwrap was not found", err)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran unconfined")
	}
}

// tempDir is t.TempDir with symlinks resolved.
func tempDir(t *testing.T) string {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestForkBombInSandbox: a fork bomb inside a sandbox hits the command's
// pids limit where one can be set, and the result says so.
func TestForkBombInSandbox(t *testing.T) {
	requireBwrap(t)
	limits := local.Limits{Pids: 64, TotalPids: 256}
	sp, err := local.NewSpawner(local.SpawnerConfig{Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	why := sp.LimitsUnavailable()
	sp.Close()
	if why != nil {
		t.Skipf("no process limit can be set here: %v", why)
	}
	e := newTestExecutor(t, Config{Config: local.Config{Limits: limits, Grace: 100 * time.Millisecond}})
	spec, _ := e.Resolve(executor.Request{Command: `bomb() { bomb | bomb & }; bomb; sleep 5`, SessionCwd: tempDir(t), Timeout: 3 * time.Second})
	res, err := e.Run(context.Background(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.LimitHit != "pids" {
		t.Errorf("LimitHit %q (exit %d %s)", res.LimitHit, res.ExitCode, res.Signal)
	}
	if after := run(t, e, executor.LevelWorkspace, tempDir(t), "echo alive"); string(after.Stdout) != "alive\n" {
		t.Errorf("after the bomb: %q %q", after.Stdout, after.Stderr)
	}
}

// TestShellIsTheDaemonsBash: a sandboxed command runs in the bash the
// daemon found, named bash ($0), as an unsandboxed one does, not in the
// first `bash` on the command's PATH: a bash planted in a directory there
// (the workspace's bin/) does not run the command. (bwrap is handed bash's
// path, so it walks no PATH either.)
func TestShellIsTheDaemonsBash(t *testing.T) {
	requireBwrap(t)
	e := newTestExecutor(t, Config{})
	ws := t.TempDir()
	bin := filepath.Join(ws, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "bash"), []byte("#!/bin/sh\necho planted\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, level := range []executor.Level{executor.LevelWorkspace, executor.LevelOff} {
		spec, err := e.Resolve(executor.Request{Command: `echo "real $0"`, SessionCwd: ws, Level: level,
			Env: map[string]string{"PATH": bin + ":" + os.Getenv("PATH")}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Run(context.Background(), spec, nil)
		if err != nil || string(res.Stdout) != "real bash\n" {
			t.Errorf("%s: got %q (stderr %q), %v; want the daemon's bash, named bash", level, res.Stdout, res.Stderr, err)
		}
	}
}
