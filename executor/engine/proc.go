package engine

import (
	"io"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
)

const (
	// drainWindow is how long the pipes may stay open after the leader
	// exited before the group is killed, and again after that kill before
	// the pipes are closed on our side.
	drainWindow = 250 * time.Millisecond
	readBufSize = 64 << 10
)

var readBufs = sync.Pool{New: func() any { b := make([]byte, readBufSize); return &b }}

// sink receives output; write must not fail or block for long.
type sink interface {
	write(st executor.Stream, p []byte)
}

// proc supervises one spawned Process: it drains the pipes, decides "done"
// on the leader's exit, and owns the one kill path every stop goes through.
//
// Lifetime: once the leader has exited (Process.Wait, which does not
// release it) leftovers (background jobs) get TERM, the pipes get
// drainWindow to reach EOF, the group gets KILL, and only then is the
// process released. No signal is sent after that.
type proc struct {
	p        Process
	out, err io.ReadCloser
	grace    time.Duration
	log      *zap.Logger

	exited    chan struct{} // closed when the leader has exited (unreleased)
	done      chan struct{} // closed when drained, released and onDone has run
	pumpsLeft atomic.Int32
	pumpsDone chan struct{}

	stopOnce sync.Once
	stopped  atomic.Bool // a stop was requested while the leader ran

	mu       sync.Mutex
	released bool

	exit Exit // set before onDone runs
}

func newProc(p Process, grace time.Duration, log *zap.Logger) *proc {
	return &proc{p: p, grace: grace, log: log, exited: make(chan struct{}), done: make(chan struct{}), pumpsDone: make(chan struct{})}
}

// begin starts the goroutines that drain the pipes into w and supervise the
// process. onDone runs once everything is over, just before done is closed.
func (p *proc) begin(w sink, onDone func()) {
	p.out, p.err = p.p.Stdout(), p.p.Stderr()
	p.pumpsLeft.Store(2)
	go p.pump(p.out, executor.Stdout, w)
	go p.pump(p.err, executor.Stderr, w)
	go p.supervise(onDone)
}

// reserver is a sink a pump can read straight into (the capture): reserve
// returns room for the next read (nil: use the pump's buffer and write),
// commit records what was read into it, unreserve ends the stream's use.
type reserver interface {
	reserve(st executor.Stream) []byte
	commit(st executor.Stream, n int)
	unreserve(st executor.Stream)
}

// pump copies one pipe into w until EOF (or until the supervisor closes it).
func (p *proc) pump(f io.ReadCloser, st executor.Stream, w sink) {
	bp := readBufs.Get().(*[]byte)
	buf := *bp
	rs, _ := w.(reserver)
	for {
		b := buf
		direct := rs != nil
		if direct {
			if room := rs.reserve(st); room != nil {
				b = room
			} else {
				direct = false
			}
		}
		n, err := f.Read(b)
		switch {
		case n > 0 && direct:
			rs.commit(st, n)
		case n > 0:
			w.write(st, b[:n])
		}
		if err != nil {
			break
		}
	}
	if rs != nil {
		rs.unreserve(st)
	}
	if fl, ok := w.(flusher); ok {
		fl.flush(st) // the stream ended: what was held back goes out
	}
	readBufs.Put(bp)
	f.Close()
	if p.pumpsLeft.Add(-1) == 0 {
		close(p.pumpsDone)
	}
}

func (p *proc) supervise(onDone func()) {
	p.p.Wait()
	close(p.exited)
	p.signal(syscall.SIGTERM) // leftovers of a finished command
	drained := waitFor(p.pumpsDone, drainWindow)
	p.signal(syscall.SIGKILL)
	if !drained && !waitFor(p.pumpsDone, drainWindow) {
		// A process outside the group (it escaped with setsid) holds the
		// pipes: stop reading.
		p.out.Close()
		p.err.Close()
		<-p.pumpsDone
	}
	p.mu.Lock()
	p.released = true
	p.mu.Unlock()
	p.exit = p.p.Release()
	onDone()
	close(p.done)
}

// signal signals the whole group, but only until the process is released.
func (p *proc) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.released {
		return
	}
	if err := p.p.Signal(sig); err != nil {
		p.log.Warn("signal group", zap.String("process", p.p.ID()), zap.Stringer("signal", sig), zap.Error(err))
	}
}

// stop is the one kill path (timeout, cancel, Kill, Shutdown): TERM to the
// group, the grace period, KILL to the group. It returns at once; done
// closes when the command is gone. A stop after the leader exited does
// nothing (the supervisor is already cleaning up).
func (p *proc) stop() {
	p.stopOnce.Do(func() {
		select {
		case <-p.exited:
			return
		default:
		}
		p.stopped.Store(true)
		go p.escalate()
	})
}

func (p *proc) escalate() { Escalate(p.signal, p.exited, p.grace) }

// Escalate is the one kill path of everything the daemon runs in a group of
// its own (commands here; MCP servers through local.Program): TERM to the
// group now, then KILL after grace unless exited closes first. signal
// sends to the whole group and must drop a signal once the process was
// released. It returns when the group exited or got its KILL.
func Escalate(signal func(syscall.Signal), exited <-chan struct{}, grace time.Duration) {
	signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-exited:
	case <-t.C:
		signal(syscall.SIGKILL)
	}
}

// waitFor reports whether ch closed within d.
func waitFor(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	default:
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}
