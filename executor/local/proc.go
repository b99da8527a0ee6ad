package local

import (
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/executor/engine"
)

// Process is a started Launch: the leader of its own session and process
// group. It implements engine.Process.
//
// Its exit is observed without reaping it (Wait: waitid(WNOWAIT) on Linux,
// a kqueue EVFILT_PROC/NOTE_EXIT on darwin), so while it is an unreaped
// zombie its pid, which is the group id, cannot be recycled, and Signal
// stays safe. Release reaps it; no signal is sent after that.
type Process struct {
	proc     *os.Process
	pid      int
	out, err *os.File
	feeds    []feed
	keep     []io.Closer
	cg       *commandCgroup // nil: no limit
	log      *zap.Logger
	wait     func(pid int) error // waitExit, or a test's

	mu     sync.Mutex
	exited bool // Wait saw the leader's exit
	reaped bool // or unknown: never signal
}

var _ engine.Process = (*Process)(nil)

func newProcess(proc *os.Process, out, err *os.File, feeds []feed, keep []io.Closer, log *zap.Logger, wait func(int) error) *Process {
	if wait == nil {
		wait = waitExit
	}
	return &Process{proc: proc, pid: proc.Pid, out: out, err: err, feeds: feeds, keep: keep, log: log, wait: wait}
}

// Pid is the leader's process id (and the group id).
func (p *Process) Pid() int { return p.pid }

// ID implements engine.Process.
func (p *Process) ID() string { return fmt.Sprint("pid ", p.pid) }

// Stdout implements engine.Process.
func (p *Process) Stdout() io.ReadCloser { return p.out }

// Stderr implements engine.Process.
func (p *Process) Stderr() io.ReadCloser { return p.err }

// Wait implements engine.Process: it blocks until the leader has exited and
// leaves it unreaped. If the exit cannot be observed, Signal is disabled
// (the pid may no longer be ours).
func (p *Process) Wait() {
	err := p.wait(p.pid)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.log.Error("cannot observe the exit", zap.Int("pid", p.pid), zap.Error(err))
		p.reaped = true
		return
	}
	p.exited = true
}

// Signal implements engine.Process: sig goes to the whole group, but only
// while the leader is unreaped.
func (p *Process) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return nil
	}
	return signalGroup(p.pid, sig, p.exited)
}

// Release implements engine.Process: it closes the feeder pipes (unblocking
// a feeder the child never read) and the kept files, and reaps the leader.
func (p *Process) Release() engine.Exit {
	p.mu.Lock()
	p.reaped = true
	p.mu.Unlock()
	for _, f := range p.feeds {
		f.w.Close()
	}
	st, err := p.proc.Wait()
	for _, c := range p.keep {
		c.Close()
	}
	var limit string
	if p.cg != nil && p.cg.finish() {
		limit = "pids"
	}
	if st == nil {
		p.log.Error("wait", zap.Int("pid", p.pid), zap.Error(err))
		return engine.Exit{Code: -1, LimitHit: limit}
	}
	e := exitOf(st)
	e.LimitHit = limit
	return e
}

// exitOf reads a reaped process's end.
func exitOf(st *os.ProcessState) engine.Exit {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return engine.Exit{Code: -1, Signal: unix.SignalName(ws.Signal())}
	}
	return engine.Exit{Code: st.ExitCode()}
}
