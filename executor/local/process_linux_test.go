package local

import (
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
)

// helpers are the roles the test binary plays when re-executed
// (helperEnv).
func helpers() map[string]func() {
	return map[string]func(){"environ": helperEnviron, "signals": helperSignals, "tty": helperTTY}
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
