package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/executortest"
	"github.com/dsh-acp/dsh-acp/executor/local"
)

// The test binary re-executes itself to play the daemon.
const (
	helperEnv      = "DSH_SANDBOX_TEST_HELPER"
	helperStateEnv = "DSH_SANDBOX_TEST_STATE"
	helperHomeEnv  = "DSH_SANDBOX_TEST_HOME"
	helperCmdEnv   = "DSH_SANDBOX_TEST_COMMAND"
	helperCwdEnv   = "DSH_SANDBOX_TEST_CWD"
	// helperNonDumpableEnv=1 makes the helper non-dumpable first, as the
	// daemon is.
	helperNonDumpableEnv = "DSH_SANDBOX_TEST_NONDUMPABLE"
	// helperGateHoldEnv=1 makes the helper never open a start gate, as a
	// daemon killed before it could (see gate_linux.go).
	helperGateHoldEnv = "DSH_SANDBOX_TEST_GATE_HOLD"
	// helperLevelsEnv lists the levels (comma-separated) role "levels"
	// runs its command at.
	helperLevelsEnv = "DSH_SANDBOX_TEST_LEVELS"
)

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "start", "run":
		helperDaemon(os.Getenv(helperEnv))
	case "secrets":
		helperSecrets()
	case "unprivileged":
		helperUnprivileged()
	case "levels":
		helperLevels()
	default:
		fmt.Fprintln(os.Stderr, "unknown helper")
		os.Exit(2)
	}
}

func helperExecutor() *Executor {
	if os.Getenv(helperNonDumpableEnv) == "1" {
		// As the daemon does at start (cmd/dsh-acp).
		if err := local.MakeNonDumpable(); err != nil {
			helperFail(err)
		}
	}
	e, err := New(Config{Config: local.Config{StateDir: os.Getenv(helperStateEnv)}, Home: os.Getenv(helperHomeEnv)})
	if err != nil {
		helperFail(err)
	}
	if why := e.Unavailable(); why != nil {
		helperFail(why)
	}
	if os.Getenv(helperGateHoldEnv) == "1" { // after the probe
		gateHold = func() { select {} }
	}
	return e
}

func helperFail(err error) {
	fmt.Fprintln(os.Stderr, "helper:", err)
	os.Exit(1)
}

// helperDaemon starts the command (in the background, or in the
// foreground from a goroutine), says "started" once Start returned (or just
// before Run), and waits to be killed.
func helperDaemon(mode string) {
	e := helperExecutor()
	spec, err := e.Resolve(executor.Request{Command: os.Getenv(helperCmdEnv), SessionCwd: os.Getenv(helperCwdEnv), Timeout: time.Hour})
	if err != nil {
		helperFail(err)
	}
	if mode == "start" {
		if _, err := e.Start(spec); err != nil {
			helperFail(err)
		}
		os.Stdout.WriteString("started\n")
	} else {
		os.Stdout.WriteString("started\n")
		go func() {
			_, err := e.Run(context.Background(), spec, nil)
			helperFail(fmt.Errorf("run returned: %v", err))
		}()
	}
	select {}
}

// helperSecrets runs the secrets probe at every level, one line each. The
// probe is built here, with the secret as a pattern that does not match
// itself (…[1]1), so no command line of the probe counts.
func helperSecrets() {
	e := helperExecutor()
	secret := os.Getenv("DSH_SANDBOX_TEST_API_KEY")
	pattern := "'" + secret[:len(secret)-1] + "[" + secret[len(secret)-1:] + "]'"
	probe := fmt.Sprintf(`{ cat /proc/1/environ /proc/$PPID/environ; cat /proc/[0-9]*/environ; } 2>/dev/null | tr '\0' '\n' | grep -c %s; ps eww -e 2>/dev/null | grep -c %s; true`, pattern, pattern)
	for _, level := range executor.AllLevels() {
		spec, err := e.Resolve(executor.Request{Command: probe, SessionCwd: os.Getenv(helperCwdEnv), Level: level})
		if err != nil {
			helperFail(err)
		}
		res, err := e.Run(context.Background(), spec, nil)
		if err != nil {
			helperFail(err)
		}
		fmt.Printf("%s %s\n", level, strings.Join(strings.Fields(string(res.Stdout)), " "))
	}
	_ = e.Shutdown(context.Background())
	os.Exit(0)
}

// helperLevels runs the command once at each level of helperLevelsEnv,
// in the subdirectory of the cwd named after the level, and prints a line
// per run: "level exit N: output".
func helperLevels() {
	e := helperExecutor()
	for _, level := range strings.Split(os.Getenv(helperLevelsEnv), ",") {
		cwd := filepath.Join(os.Getenv(helperCwdEnv), level)
		spec, err := e.Resolve(executor.Request{Command: os.Getenv(helperCmdEnv), SessionCwd: cwd, Level: executor.Level(level)})
		if err != nil {
			helperFail(err)
		}
		res, err := e.Run(context.Background(), spec, nil)
		if err != nil {
			helperFail(err)
		}
		fmt.Printf("%s exit %d: %q\n", level, res.ExitCode, res.Combined)
	}
	_ = e.Shutdown(context.Background())
	os.Exit(0)
}

// helperUnprivileged checks, as whatever user it runs as, what the
// unprivileged path must give: a usable sandbox, the TERM path, escapes
// ended, the workspace writable and / not. One "name: ok" line per check.
func helperUnprivileged() {
	e := helperExecutor()
	cwd, m := os.Getenv(helperCwdEnv), os.Getenv(helperCmdEnv)
	check := func(name, command string, timeout time.Duration, ok func(executor.Result) bool) {
		spec, err := e.Resolve(executor.Request{Command: command, SessionCwd: cwd, Timeout: timeout})
		if err != nil {
			helperFail(err)
		}
		res, err := e.Run(context.Background(), spec, nil)
		if err != nil {
			helperFail(err)
		}
		verdict := "ok"
		if !ok(res) {
			verdict = fmt.Sprintf("failed: %+v", res)
		}
		fmt.Printf("%s: %s\n", name, verdict)
	}
	check("uid", "id -u", time.Minute, func(r executor.Result) bool {
		return strings.TrimSpace(string(r.Stdout)) == strconv.Itoa(os.Getuid())
	})
	check("term trapped", "trap 'exit 0' TERM; sleep "+m+" & wait", time.Second, func(r executor.Result) bool {
		return r.TimedOut && r.ExitCode == 0 && r.Signal == ""
	})
	check("escape", "(setsid sleep "+m+" &); echo started", time.Minute, func(r executor.Result) bool {
		return string(r.Stdout) == "started\n"
	})
	check("writes", "echo x > f && cat f && ! touch /etc/dsh-x 2>/dev/null", time.Minute, func(r executor.Result) bool {
		return string(r.Stdout) == "x\n" && r.ExitCode == 0
	})
	// The home is the helper's own: only the kernel's read-only mount
	// refuses this write.
	check("outside refused", "touch \"$HOME/outside\"", time.Minute, func(r executor.Result) bool {
		_, err := os.Stat(filepath.Join(os.Getenv(helperHomeEnv), "outside"))
		return r.ExitCode != 0 && strings.Contains(string(r.Stderr), "Read-only file system") && os.IsNotExist(err)
	})
	fmt.Printf("default: %s\n", e.DefaultLevel())
	_ = e.Shutdown(context.Background())
	os.Exit(0)
}

// helper is a started daemon helper.
type helper struct {
	cmd  *exec.Cmd
	out  *bufio.Reader
	errb *strings.Builder
}

func startHelper(t *testing.T, role, command string, extraEnv ...string) *helper {
	t.Helper()
	return startHelperAs(t, nil, os.Args[0], role, command, t.TempDir(), testHome(t), tempDir(t), extraEnv...)
}

func startHelperAs(t *testing.T, cred *syscall.Credential, binary, role, command, state, home, cwd string, extraEnv ...string) *helper {
	t.Helper()
	cmd := exec.Command(binary, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+role, helperStateEnv+"="+state, helperHomeEnv+"="+home,
		helperCmdEnv+"="+command, helperCwdEnv+"="+cwd, "GORACE=atexit_sleep_ms=0")
	cmd.Env = append(cmd.Env, extraEnv...)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		cmd.Dir = cwd
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helper{cmd: cmd, out: bufio.NewReader(out), errb: &stderr}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return h
}

func (h *helper) waitLine(t *testing.T, want string) {
	t.Helper()
	line, err := h.out.ReadString('\n')
	if err != nil || line != want+"\n" {
		_ = h.cmd.Process.Kill()
		_ = h.cmd.Wait()
		t.Fatalf("helper said %q (%v); stderr %q", line, err, h.errb.String())
	}
}

// kill SIGKILLs the helper and reaps it.
func (h *helper) kill() {
	_ = h.cmd.Process.Signal(syscall.SIGKILL)
	_ = h.cmd.Wait()
}

// survivors waits up to d for every process carrying marker to be gone
// and returns those still alive then.
func survivors(marker string, d time.Duration) []string {
	deadline := time.Now().Add(d)
	for {
		left := executortest.Processes(marker)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func newMarker() string { return fmt.Sprintf("300.%d", rand.Uint32N(1000000000)) }

// TestDaemonKilledDuringCommand: SIGKILL of the daemon while a foreground
// and a background command (each with a setsid'd escape) run leaves no
// survivor within a second.
func TestDaemonKilledDuringCommand(t *testing.T) {
	requireBwrap(t)
	for _, role := range []string{"run", "start"} {
		m := newMarker()
		h := startHelper(t, role, fmt.Sprintf("(setsid sleep %s &); nohup sleep %s >/dev/null 2>&1 & sleep %s", m, m, m))
		h.waitLine(t, "started")
		deadline := time.Now().Add(10 * time.Second)
		for len(executortest.Processes(m)) < 3 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the command never ran: %v (stderr %q)", role, executortest.Processes(m), h.errb.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
		h.kill()
		if left := survivors(m, time.Second); len(left) > 0 {
			t.Errorf("%s: survived the daemon's SIGKILL by more than 1 s: %v", role, left)
			killMarked(m)
		}
	}
}

// TestStopRightAfterStart measures the start window from inside: Kill right
// after Start, a 1 ms timeout, a cancel 0–3 ms in; nothing may survive.
func TestStopRightAfterStart(t *testing.T) {
	requireBwrap(t)
	e := newTestExecutor(t, Config{Config: local.Config{Grace: 100 * time.Millisecond}})
	ws := tempDir(t)
	runs := 30
	if testing.Short() {
		runs = 8
	}
	leaked := 0
	check := func(what string, m string) {
		if left := survivors(m, 2*time.Second); len(left) > 0 {
			leaked++
			t.Errorf("%s: survivors %v", what, left)
			killMarked(m)
		}
	}
	for i := range runs {
		m := newMarker()
		spec, _ := e.Resolve(executor.Request{Command: fmt.Sprintf("(setsid sleep %s &); sleep %s", m, m), SessionCwd: ws})
		id, err := e.Start(spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Kill(context.Background(), id, ""); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("run %d, Kill at once", i), m)

		m = newMarker()
		spec, _ = e.Resolve(executor.Request{Command: fmt.Sprintf("(setsid sleep %s &); sleep %s", m, m), SessionCwd: ws, Timeout: time.Millisecond})
		if res, err := e.Run(context.Background(), spec, nil); err != nil || !res.TimedOut {
			t.Fatalf("1 ms timeout: %+v %v", res, err)
		}
		check(fmt.Sprintf("run %d, 1 ms timeout", i), m)

		m = newMarker()
		spec, _ = e.Resolve(executor.Request{Command: fmt.Sprintf("(setsid sleep %s &); sleep %s", m, m), SessionCwd: ws})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Duration(i%4)*time.Millisecond, cancel)
		if _, err := e.Run(ctx, spec, nil); err != nil && ctx.Err() == nil {
			t.Fatal(err)
		}
		cancel()
		check(fmt.Sprintf("run %d, cancel after %d ms", i, i%4), m)
	}
	t.Logf("stopped right after the start (Kill, 1 ms timeout, cancel 0–3 ms): %d of %d runs left a survivor", leaked, 3*runs)
}

// TestNoParentSecretsAsDaemon: the daemon's real environment (set at exec,
// so it is in /proc/<daemon>/environ) is invisible to sandboxed commands,
// even as root; at level off, as root, the probe sees it (the control).
func TestNoParentSecretsAsDaemon(t *testing.T) {
	requireBwrap(t)
	h := startHelper(t, "secrets", "", "DSH_SANDBOX_TEST_API_KEY=dsh-daemon-secret-4711")
	out, _ := readAll(h.out)
	if err := h.cmd.Wait(); err != nil {
		t.Fatalf("helper: %v; stderr %q", err, h.errb.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("helper said %q", out)
		}
		level := executor.Level(f[0])
		seen := f[1] != "0" || f[2] != "0"
		switch {
		case level.Confined() && seen:
			t.Errorf("%s: the daemon's secret was visible (environ %s, ps %s)", level, f[1], f[2])
		case level == executor.LevelOff && os.Geteuid() == 0 && f[1] == "0":
			t.Errorf("control at level off as root: the probe did not see the daemon's environment: %q", line)
		}
	}
}

func readAll(r *bufio.Reader) (string, error) {
	b, err := io.ReadAll(r)
	return string(b), err
}

// killMarked kills, as cleanup after a failure, what survived.
func killMarked(marker string) {
	for _, p := range executortest.Processes(marker) {
		var pid int
		if _, err := fmt.Sscanf(p, "%d:", &pid); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// TestUnprivileged runs the sandbox as nobody (the tests themselves run as
// root here): bwrap then starts as pid 1 of a pid namespace in a user
// namespace of the daemon's own making, or, when the daemon is
// non-dumpable as the real one is, of unshare(1)'s. The default level is
// workspace and a write outside it is refused by the kernel.
func TestUnprivileged(t *testing.T) {
	requireBwrap(t)
	if os.Geteuid() != 0 {
		t.Skip("not root: every other test already runs the unprivileged path")
	}
	for _, nonDumpable := range []bool{false, true} {
		// Not parallel: a copy of the binary still open for writing in one
		// subtest could be inherited by the other's fork (ETXTBSY).
		t.Run(map[bool]string{false: "dumpable", true: "non-dumpable"}[nonDumpable], func(t *testing.T) {
			testUnprivileged(t, nonDumpable)
		})
	}
}

func testUnprivileged(t *testing.T, nonDumpable bool) {
	u := newUnprivileged(t)
	m := newMarker()
	env := helperNonDumpableEnv + "=0"
	if nonDumpable {
		env = helperNonDumpableEnv + "=1"
	}
	h := startHelperAs(t, u.cred, u.binary, "unprivileged", m, u.own("state"), u.own("home"), u.own("cwd"), env)
	out, _ := readAll(h.out)
	if err := h.cmd.Wait(); err != nil {
		t.Fatalf("helper as nobody: %v; stderr %q", err, h.errb.String())
	}
	want := "uid: ok\nterm trapped: ok\nescape: ok\nwrites: ok\noutside refused: ok\ndefault: workspace\n"
	if out != want {
		t.Errorf("as nobody:\n%s\nwant\n%s(stderr %q)", out, want, h.errb.String())
	}
	if left := survivors(m, 2*time.Second); len(left) > 0 {
		t.Errorf("as nobody, survivors: %v", left)
		killMarked(m)
	}
}

// unprivileged is a copy of the test binary that nobody (uid and gid
// 65534) can run, and a place for nobody's directories.
type unprivileged struct {
	t           *testing.T
	dir, binary string
	cred        *syscall.Credential
}

func newUnprivileged(t *testing.T) *unprivileged {
	t.Helper()
	const nobody = 65534
	dir, err := os.MkdirTemp("", "dsh-sandbox-nobody-") // t.TempDir's parent is closed to nobody
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	u := &unprivileged{t: t, dir: dir, binary: filepath.Join(dir, "sandbox.test"), cred: &syscall.Credential{Uid: nobody, Gid: nobody}}
	if err := copyFile(os.Args[0], u.binary); err != nil {
		t.Fatal(err)
	}
	return u
}

// own makes a directory name (with a .cache) that nobody owns.
func (u *unprivileged) own(name string) string {
	u.t.Helper()
	p := filepath.Join(u.dir, name)
	if err := os.MkdirAll(filepath.Join(p, ".cache"), 0o755); err != nil {
		u.t.Fatal(err)
	}
	for _, q := range []string{p, filepath.Join(p, ".cache")} {
		if err := os.Chown(q, int(u.cred.Uid), int(u.cred.Gid)); err != nil {
			u.t.Fatal(err)
		}
	}
	return p
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}

// TestStopDuringSetUpSkipsTheGrace: a stop that lands while bubblewrap is
// still setting the sandbox up ends it at once, not after the grace period
// (an hour here): bwrap and its init are pid 1s that ignore TERM, and no
// command runs yet for a TERM to reach. Kill right after Start lands there
// in most runs; a stop after the command started is a TERM as before.
func TestStopDuringSetUpSkipsTheGrace(t *testing.T) {
	requireBwrap(t)
	e := newTestExecutor(t, Config{Config: local.Config{Grace: time.Hour}})
	ws := tempDir(t)
	bySignal := map[string]int{}
	for i := range 10 {
		spec, _ := e.Resolve(executor.Request{Command: "sleep 1000", SessionCwd: ws})
		id, err := e.Start(spec)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := e.Kill(ctx, id, "")
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if res.Status == executor.Running {
			t.Fatalf("run %d: the stop still waits for the grace period after 30 s: %+v", i, res)
		}
		if res.Signal != "SIGTERM" && res.Signal != "SIGKILL" {
			t.Errorf("run %d: ended by %+v, want SIGTERM or SIGKILL", i, res)
		}
		bySignal[res.Signal]++
	}
	t.Logf("ended by %v (SIGKILL: stopped during set-up)", bySignal)
}
