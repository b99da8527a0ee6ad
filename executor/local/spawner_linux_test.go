package local

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/engine"
)

// fileFlags reads f's status flags without Fd (which would set f blocking).
func fileFlags(t *testing.T, f *os.File) int {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	var ferr error
	if err := rc.Control(func(fd uintptr) { flags, ferr = unix.FcntlInt(fd, unix.F_GETFL, 0) }); err != nil {
		t.Fatal(err)
	}
	if ferr != nil {
		t.Fatal(ferr)
	}
	return flags
}

// An output pipe's write end (the child's) is blocking and never made
// pollable; its read end (the daemon's) is, so a Close unblocks a Read.
func TestOutputPipe(t *testing.T) {
	r, w, err := outputPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if fileFlags(t, w)&unix.O_NONBLOCK != 0 {
		t.Error("the write end is non-blocking: it was made pollable")
	}
	if fileFlags(t, r)&unix.O_NONBLOCK == 0 {
		t.Error("the read end is blocking: Close cannot unblock a Read")
	}
	read := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 1))
		read <- err
	}()
	time.Sleep(10 * time.Millisecond) // let the Read block (it must fail either way)
	r.Close()
	select {
	case err := <-read:
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("Read after Close: %v, want os.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock the Read")
	}
}

// kcmpFile is KCMP_FILE of kcmp(2).
const kcmpFile = 0

// Every command's stdin is the Spawner's one /dev/null, not a fresh open
// per start: the child's fd 0 is the same open file description.
func TestCommandsShareOneDevNull(t *testing.T) {
	sp, err := NewSpawner(SpawnerConfig{Limits: Limits{Pids: -1, TotalPids: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	for i := range 2 {
		p, err := sp.Spawn(engine.Command{Spec: executor.Spec{Command: "sleep 30", Workdir: t.TempDir(), Level: executor.LevelOff}, Env: os.Environ()})
		if err != nil {
			t.Fatal(err)
		}
		proc := p.(*Process)
		rc, err := sp.devNull.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var same uintptr
		var errno syscall.Errno
		_ = rc.Control(func(fd uintptr) {
			same, _, errno = unix.Syscall6(unix.SYS_KCMP, uintptr(os.Getpid()), uintptr(proc.Pid()), kcmpFile, fd, 0, 0)
		})
		_ = proc.Signal(syscall.SIGKILL)
		proc.Wait()
		proc.Release()
		if errno != 0 {
			t.Skipf("kcmp(2) is not available here: %v", errno)
		}
		if same != 0 {
			t.Errorf("command %d: its stdin is not the Spawner's /dev/null (kcmp %d)", i+1, same)
		}
	}
}

// threads is how many OS threads this process has.
func threads(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads: in /proc/self/status")
	return 0
}

// Waiting for a command's exit holds no OS thread: many running tasks do
// not make the daemon start a thread each (the exit is watched on a pidfd
// through the poller, not by a thread blocked in waitid).
func TestExitWaitHoldsNoThread(t *testing.T) {
	if fd, err := unix.PidfdOpen(os.Getpid(), 0); err != nil {
		t.Skipf("no pidfds here (%v): exits are waited for by a blocking waitid", err)
	} else {
		unix.Close(fd)
	}
	e := newTestExecutor(t, Config{Limits: Limits{Pids: -1, TotalPids: -1}})
	const tasks = 48
	before := threads(t)
	for range tasks {
		if _, err := e.Start(resolve(t, e, "sleep 30")); err != nil {
			t.Fatal(err)
		}
	}
	// Every supervisor is in its wait within moments; a blocking waitid
	// would hold a thread each by then.
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if n := threads(t); n >= before+tasks/2 {
			t.Fatalf("%d threads with %d tasks running (%d before): exit waits hold threads", n, tasks, before)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The environment a command is started with (bash's own, which it would
// deduplicate for its children anyway) has one entry per name, the last of the
// base environment's (as os/exec would have made it at every start): the
// engine deduplicates it once, the Spawner passes it as it is.
func TestEnvironmentOneEntryPerName(t *testing.T) {
	sp, err := NewSpawner(SpawnerConfig{Limits: Limits{Pids: -1, TotalPids: -1}})
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(sp, engine.Config{StateDir: t.TempDir(),
		BaseEnv: []string{"PATH=" + os.Getenv("PATH"), "DSH_DUP=first", "DSH_OTHER=x", "DSH_DUP=last", "PAGER=less"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(t.Context())
	res, err := e.Run(t.Context(), executor.Spec{Command: `tr '\0' '\n' < /proc/$$/environ`, Workdir: t.TempDir(), Timeout: time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string][]string{}
	for _, kv := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
		name, value, _ := strings.Cut(kv, "=")
		counts[name] = append(counts[name], value)
	}
	for name, want := range map[string]string{"DSH_DUP": "last", "DSH_OTHER": "x", "PAGER": "cat"} {
		if got := counts[name]; len(got) != 1 || got[0] != want {
			t.Errorf("%s in the command's environment: %q, want once %q", name, got, want)
		}
	}
}
