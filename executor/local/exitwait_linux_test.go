package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/engine"
	"github.com/dsh-acp/dsh-acp/executor/executortest"
)

// pidfdExits is exitEvents on Linux with kqueue's semantics, so that
// awaitExit, the darwin exit logic, runs against real processes here: Next
// is a poll on a pidfd (readable once the process has exited, which reaps
// nothing), and Watch refuses a process that is already a zombie with ESRCH,
// as kqueue refuses to attach to an exited process. With late set, Watch
// first waits (waitid WNOWAIT) until the process has exited, so the watch is
// always refused: the exit-before-watch path, deterministically.
type pidfdExits struct {
	late   bool
	fd     int // -1 until Watch succeeds
	counts *pathCounts
}

// pathCounts counts which way awaitExit learnt of each exit.
type pathCounts struct {
	events, refused atomic.Int64
}

func (p *pidfdExits) Watch(pid int) error {
	if p.late {
		if err := waitExit(pid); err != nil {
			return err
		}
	}
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return err
	}
	if state, _, err := procStat(pid); err == nil && (state == "Z" || state == "X") {
		unix.Close(fd)
		p.counts.refused.Add(1)
		return unix.ESRCH
	}
	p.fd = fd
	return nil
}

func (p *pidfdExits) Next() (bool, error) {
	fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, -1)
	if err != nil || n == 0 {
		return false, err
	}
	if fds[0].Revents&unix.POLLIN != 0 {
		p.counts.events.Add(1)
		return true, nil
	}
	return false, fmt.Errorf("pidfd poll: revents %#x", fds[0].Revents)
}

func (p *pidfdExits) Exited(pid int) (bool, error) {
	state, ppid, err := procStat(pid)
	if err != nil {
		return false, err
	}
	return ppid == os.Getpid() && (state == "Z" || state == "X"), nil
}

func (p *pidfdExits) Close() error {
	if p.fd >= 0 {
		return unix.Close(p.fd)
	}
	return nil
}

// requirePidfd skips (fails under CI=true) where the kernel has no
// pidfd_open (before Linux 5.3).
func requirePidfd(t *testing.T) {
	t.Helper()
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err == nil {
		unix.Close(fd)
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and pidfd_open fails: %v", err)
	}
	t.Skipf("pidfd_open fails (Linux before 5.3?): %v", err)
}

// procStat reads a process's state letter and parent from /proc/pid/stat.
func procStat(pid int) (state string, ppid int, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", 0, errors.New("malformed stat")
	}
	if _, err := fmt.Sscan(s[i+1:], &state, &ppid); err != nil {
		return "", 0, fmt.Errorf("stat: %w", err)
	}
	return state, ppid, nil
}

// newKqueueShapedExecutor is the local executor with its exit detection
// replaced by awaitExit over pidfdExits — the darwin code path but for the
// kqueue calls — alternating early and late watches.
func newKqueueShapedExecutor(t *testing.T, counts *pathCounts) *Executor {
	t.Helper()
	requirePidfd(t)
	sp, err := NewSpawner(SpawnerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	sp.waitExit = func(pid int) error {
		return awaitExit(&pidfdExits{late: n.Add(1)%2 == 0, fd: -1, counts: counts}, pid)
	}
	e, err := engine.New(sp, Config{StateDir: t.TempDir(), Grace: testGrace}.Engine())
	if err != nil {
		sp.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return e
}

// TestConformanceKqueueShaped runs the executor contract (exit codes,
// signals, background leftovers killed after the leader's exit, every stop
// path) with the darwin exit logic, and checks that both of its paths were
// taken: an exit event, and a watch refused because the leader had already
// exited.
func TestConformanceKqueueShaped(t *testing.T) {
	var counts pathCounts
	executortest.Run(t, func(t *testing.T) executor.Executor {
		return newKqueueShapedExecutor(t, &counts)
	})
	if !executortest.Rerun() && (counts.events.Load() == 0 || counts.refused.Load() == 0) {
		t.Errorf("exits seen by event %d, by a refused watch %d; want both paths taken", counts.events.Load(), counts.refused.Load())
	}
	t.Logf("exits seen by event %d, by a refused watch %d", counts.events.Load(), counts.refused.Load())
}

// TestKqueueShapedLeftoverKilledAfterExit: the leader exits first (seen
// either way), then the group is signalled — its background child dies —
// and only then is the leader reaped, with its own exit status.
func TestKqueueShapedLeftoverKilledAfterExit(t *testing.T) {
	for _, late := range []bool{false, true} {
		t.Run(fmt.Sprintf("late watch %v", late), func(t *testing.T) {
			requirePidfd(t)
			var counts pathCounts
			sp, err := NewSpawner(SpawnerConfig{})
			if err != nil {
				t.Fatal(err)
			}
			defer sp.Close()
			sp.waitExit = func(pid int) error { return awaitExit(&pidfdExits{late: late, fd: -1, counts: &counts}, pid) }
			pidFile := t.TempDir() + "/bg"
			p, err := sp.Spawn(engine.Command{
				Spec: executor.Spec{Command: fmt.Sprintf(`sleep 300 & echo $! > %s; exit 7`, pidFile), Workdir: "/", Level: executor.LevelOff},
				Env:  os.Environ(),
			})
			if err != nil {
				t.Fatal(err)
			}
			p.Stdout().Close()
			p.Stderr().Close()
			p.Wait()
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			var bg int
			if _, err := fmt.Sscan(string(b), &bg); err != nil {
				t.Fatal(err)
			}
			leader := p.(*Process).Pid()
			if state, _, err := procStat(leader); err != nil || state != "Z" {
				t.Fatalf("after Wait the leader is %q (%v); want an unreaped zombie", state, err)
			}
			if err := p.Signal(unix.SIGKILL); err != nil {
				t.Fatalf("Signal after the exit: %v", err)
			}
			eventually(t, 5*time.Second, "the background child to die", func() bool {
				state, _, err := procStat(bg)
				return err != nil || state == "Z" || state == "X"
			})
			if exit := p.Release(); exit.Code != 7 || exit.Signal != "" {
				t.Errorf("Release: %+v; want exit 7", exit)
			}
			seen := counts.events.Load() + counts.refused.Load()
			if seen != 1 || late && counts.refused.Load() != 1 {
				t.Errorf("exit seen by event %d, by a refused watch %d; want once (by a refused watch when late)", counts.events.Load(), counts.refused.Load())
			}
		})
	}
}
