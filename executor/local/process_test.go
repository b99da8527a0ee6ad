package local

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/executor"
)

// helperEnv selects a helper role when the test binary re-executes itself.
const helperEnv = "DSH_LOCAL_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "environ":
		helperEnviron()
	case "signals":
		helperSignals()
	case "tty":
		helperTTY()
	default:
		fmt.Fprintln(os.Stderr, "unknown helper")
		os.Exit(2)
	}
}

// helperRun runs command through a fresh Executor and returns its stdout.
func helperRun(command string) string {
	state, err := os.MkdirTemp("", "dsh-helper-*")
	if err != nil {
		helperFail(err)
	}
	defer os.RemoveAll(state)
	e, err := New(Config{StateDir: state})
	if err != nil {
		helperFail(err)
	}
	defer e.Shutdown(context.Background())
	res, err := e.Run(context.Background(), executor.Spec{Command: command, Workdir: "/", Timeout: 20 * time.Second}, nil)
	if err != nil {
		helperFail(err)
	}
	return strings.TrimSpace(string(res.Stdout))
}

func helperFail(err error) {
	fmt.Fprintln(os.Stderr, "helper:", err)
	os.Exit(1)
}

// helperEnviron plays the daemon: a command reads /proc/$PPID/environ once
// while the daemon is dumpable (the control) and once after
// MakeNonDumpable. Root bypasses the check, so as root it first becomes
// nobody (which clears dumpable; it is set again for the control).
func helperEnviron() {
	if os.Geteuid() == 0 {
		for _, err := range []error{syscall.Setgroups(nil), syscall.Setgid(65534), syscall.Setuid(65534)} {
			if err != nil {
				helperFail(err)
			}
		}
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0); err != nil {
		helperFail(err)
	}
	const probe = `tr '\0' '\n' < /proc/$PPID/environ 2>/dev/null | grep -c '^DSH_HELPER_SECRET=' || true`
	before := helperRun(probe)
	if err := MakeNonDumpable(); err != nil {
		helperFail(err)
	}
	after := helperRun(probe)
	fmt.Printf("before=%s after=%s\n", before, after)
	os.Exit(0)
}

func TestMakeNonDumpable(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=environ", "DSH_HELPER_SECRET=hunter2", "GORACE=atexit_sleep_ms=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v: %s", err, stderrOf(err))
	}
	if got := strings.TrimSpace(string(out)); got != "before=1 after=0" {
		t.Errorf("helper said %q; want the child to read the environ only before MakeNonDumpable", got)
	}
}

// helperSignals plays a daemon started with SIGHUP and SIGINT ignored: it
// reports the ignored mask its commands start with, before and after
// ResetSignalDispositions.
func helperSignals() {
	const probe = `sed -n 's/^SigIgn:\s*//p' /proc/$$/status`
	before := helperRun(probe)
	ResetSignalDispositions()
	after := helperRun(probe)
	fmt.Printf("%s %s\n", before, after)
	os.Exit(0)
}

func TestResetSignalDispositions(t *testing.T) {
	// bash's trap '' sets SIG_IGN, which exec keeps.
	cmd := exec.Command("bash", "-c", `trap '' HUP INT; exec "$0" -test.run='^$'`, os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=signals", "GORACE=atexit_sleep_ms=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v: %s", err, stderrOf(err))
	}
	masks := strings.Fields(string(out))
	if len(masks) != 2 {
		t.Fatalf("helper said %q", out)
	}
	const hupInt = 1<<(unix.SIGHUP-1) | 1<<(unix.SIGINT-1)
	before, err1 := strconv.ParseUint(masks[0], 16, 64)
	after, err2 := strconv.ParseUint(masks[1], 16, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("helper said %q", out)
	}
	if before&hupInt != hupInt || after&hupInt != 0 {
		t.Errorf("ignored mask before %#x after %#x; want HUP and INT ignored only before", before, after)
	}
}

// helperTTY plays a daemon whose stdin and controlling terminal are a
// terminal. A plain child can write to /dev/tty (the control); a command run
// by the executor must find neither the terminal nor the daemon's stdin.
func helperTTY() {
	out, _ := exec.Command("bash", "-c", `echo prompt > /dev/tty && echo "has tty"`).Output()
	fmt.Printf("control: %s", out)
	fmt.Printf("run: %s\n", helperRun(`cat; read -r x; echo "read=$?"; echo prompt > /dev/tty || echo "no tty"`))
	os.Exit(0)
}

func TestRunNoTerminalNoStdin(t *testing.T) {
	master, slave := openPTY(t)
	go func() { _, _ = io.Copy(io.Discard, master) }() // what the control writes
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=tty", "GORACE=atexit_sleep_ms=0")
	cmd.Stdin = slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v: %s", err, stderrOf(err))
	}
	want := "control: has tty\nrun: read=1\nno tty\n"
	if string(out) != want {
		t.Errorf("helper said %q, want %q", out, want)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("took %v: something waited on the terminal", took)
	}
}

// openPTY opens a pseudo-terminal pair, closed when the test ends.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { master.Close() })
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slave.Close() })
	return master, slave
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

func TestResolve(t *testing.T) {
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	e := newTestExecutor(t, Config{DefaultTimeout: 5 * time.Second, MaxTimeout: 10 * time.Second})
	withDefault := newTestExecutor(t, Config{DefaultWorkdir: "/srv"})
	tests := []struct {
		name    string
		e       *Executor
		req     executor.Request
		dir     string
		timeout time.Duration
	}{
		{name: "session cwd", e: e, req: executor.Request{SessionCwd: "/work/s"}, dir: "/work/s", timeout: 5 * time.Second},
		{name: "relative to session", e: e, req: executor.Request{Workdir: "sub/../x", SessionCwd: "/work/s"}, dir: "/work/s/x", timeout: 5 * time.Second},
		{name: "absolute wins", e: e, req: executor.Request{Workdir: "/abs/", SessionCwd: "/work/s"}, dir: "/abs", timeout: 5 * time.Second},
		{name: "config default", e: withDefault, req: executor.Request{}, dir: "/srv", timeout: DefaultTimeout},
		{name: "relative to config default", e: withDefault, req: executor.Request{Workdir: "a"}, dir: "/srv/a", timeout: DefaultTimeout},
		{name: "process cwd", e: e, req: executor.Request{Timeout: time.Second}, dir: cwd, timeout: time.Second},
		{name: "clamped", e: e, req: executor.Request{SessionCwd: "/", Timeout: time.Hour}, dir: "/", timeout: 10 * time.Second},
		{name: "default cap", e: withDefault, req: executor.Request{Timeout: time.Hour}, dir: "/srv", timeout: DefaultMaxTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Command, tc.req.Owner = "cmd", "own"
			spec, err := tc.e.Resolve(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if spec.Workdir != tc.dir || spec.Timeout != tc.timeout || spec.Command != "cmd" || spec.Owner != "own" {
				t.Errorf("got %+v; want dir %q timeout %v", spec, tc.dir, tc.timeout)
			}
		})
	}
	if _, err := e.Resolve(executor.Request{Timeout: -time.Millisecond}); err == nil {
		t.Error("negative timeout: no error")
	}
	req := executor.Request{SessionCwd: "/", Stdin: []byte("in"), Env: map[string]string{"A": "1"}}
	spec, _ := e.Resolve(req)
	req.Stdin[0], req.Env["A"] = 'X', "2"
	if string(spec.Stdin) != "in" || spec.Env["A"] != "1" {
		t.Errorf("Resolve kept references to the request: %+v", spec)
	}
}
