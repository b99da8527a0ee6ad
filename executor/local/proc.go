package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/executor"
)

const (
	// maxArgScript is the longest script passed as `bash -c script`; a
	// longer one is fed on fd 3 (one argv string may not exceed 128 KiB).
	maxArgScript = 64 << 10
	// longScriptPrefix closes fd 3 before the script's first command, so
	// the script pipe does not leak into the commands it starts. It shares
	// line 1 with the script, keeping $LINENO right.
	longScriptPrefix = "exec 3<&-; "
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

// proc is one `bash` in its own session and process group, with the pipes
// we read and the one kill path every stop goes through.
//
// Lifetime: the leader's exit is observed with waitid(WNOWAIT), which leaves
// it a zombie. While it is a zombie its pid, and so the group id, cannot be
// reused, so the group can still be signalled safely: leftovers (background
// jobs) get TERM, the pipes get drainWindow to reach EOF, the group gets
// KILL, and only then is the leader reaped. No signal is sent after that.
type proc struct {
	cmd        *exec.Cmd
	pid        int
	grace      time.Duration
	log        *zap.Logger
	outR, errR *os.File
	feeds      []feed

	exited    chan struct{} // closed when the leader has exited (unreaped)
	done      chan struct{} // closed when drained, reaped and onDone has run
	pumpsLeft atomic.Int32
	pumpsDone chan struct{}

	stopOnce sync.Once
	stopped  atomic.Bool // a stop was requested while the leader ran

	mu     sync.Mutex
	reaped bool

	// Set before onDone runs.
	exitCode int
	signal   string
}

// feed is data written to a pipe the child reads (stdin, the script).
type feed struct {
	w    *os.File
	data []byte
}

type procOpts struct {
	bash  string
	env   []string
	grace time.Duration
	log   *zap.Logger
}

// startProc starts spec's command. The caller must call begin.
func startProc(spec executor.Spec, o procOpts) (_ *proc, err error) {
	var closeAfterStart, closeOnErr []*os.File
	defer func() {
		for _, f := range closeAfterStart {
			f.Close()
		}
		if err != nil {
			for _, f := range closeOnErr {
				f.Close()
			}
		}
	}()
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err != nil {
			return nil, nil, fmt.Errorf("pipe: %w", err)
		}
		return r, w, nil
	}
	outR, outW, err := pipe()
	if err != nil {
		return nil, err
	}
	closeAfterStart, closeOnErr = append(closeAfterStart, outW), append(closeOnErr, outR)
	errR, errW, err := pipe()
	if err != nil {
		return nil, err
	}
	closeAfterStart, closeOnErr = append(closeAfterStart, errW), append(closeOnErr, errR)

	p := &proc{
		pid: -1, grace: o.grace, log: o.log, outR: outR, errR: errR,
		exited: make(chan struct{}), done: make(chan struct{}), pumpsDone: make(chan struct{}),
	}
	args := []string{"-c", spec.Command}
	var extra []*os.File
	if len(spec.Command) > maxArgScript {
		r, w, err := pipe()
		if err != nil {
			return nil, err
		}
		closeAfterStart, closeOnErr = append(closeAfterStart, r), append(closeOnErr, w)
		extra = []*os.File{r}
		// `.` reads the whole file before running it, and keeps `bash -c`'s
		// $0 ("bash"), exit status and exit semantics.
		args = []string{"-c", ". /dev/fd/3", "bash"}
		p.feeds = append(p.feeds, feed{w: w, data: []byte(longScriptPrefix + spec.Command)})
	}
	cmd := exec.Command(o.bash, args...)
	cmd.Args[0] = "bash"
	cmd.Dir, cmd.Env = spec.Workdir, o.env
	cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = outW, errW, extra
	// Setsid: own session and process group (the group id is the pid), and
	// no controlling terminal, so /dev/tty prompts fail instead of hanging.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if len(spec.Stdin) > 0 {
		r, w, err := pipe()
		if err != nil {
			return nil, err
		}
		closeAfterStart, closeOnErr = append(closeAfterStart, r), append(closeOnErr, w)
		cmd.Stdin = r
		p.feeds = append(p.feeds, feed{w: w, data: spec.Stdin})
	} // else os/exec connects /dev/null: never the daemon's stdin.
	if err := cmd.Start(); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && pe.Op == "chdir" {
			return nil, fmt.Errorf("%w %q: %w", executor.ErrWorkdir, spec.Workdir, pe.Err)
		}
		return nil, fmt.Errorf("start bash: %w", err)
	}
	p.cmd, p.pid = cmd, cmd.Process.Pid
	return p, nil
}

// begin starts the goroutines that feed the child, drain its pipes into w
// and supervise it. onDone runs once everything is over, just before done
// is closed.
func (p *proc) begin(w sink, onDone func()) {
	for _, f := range p.feeds {
		go func() {
			_, _ = f.w.Write(f.data) // EPIPE when the child stops reading
			f.w.Close()
		}()
	}
	p.pumpsLeft.Store(2)
	go p.pump(p.outR, executor.Stdout, w)
	go p.pump(p.errR, executor.Stderr, w)
	go p.supervise(onDone)
}

// pump copies one pipe into w until EOF (or until the supervisor closes it).
func (p *proc) pump(f *os.File, st executor.Stream, w sink) {
	bp := readBufs.Get().(*[]byte)
	buf := *bp
	for {
		n, err := f.Read(buf)
		if n > 0 {
			w.write(st, buf[:n])
		}
		if err != nil {
			break
		}
	}
	readBufs.Put(bp)
	f.Close()
	if p.pumpsLeft.Add(-1) == 0 {
		close(p.pumpsDone)
	}
}

func (p *proc) supervise(onDone func()) {
	p.waitExit()
	close(p.exited)
	p.kill(unix.SIGTERM) // leftovers of a finished command
	drained := waitFor(p.pumpsDone, drainWindow)
	p.kill(unix.SIGKILL)
	if !drained && !waitFor(p.pumpsDone, drainWindow) {
		// A process outside the group (it escaped with setsid) holds the
		// pipes: stop reading.
		p.outR.Close()
		p.errR.Close()
		<-p.pumpsDone
	}
	for _, f := range p.feeds {
		f.w.Close() // unblocks a feeder the child never read
	}
	p.mu.Lock()
	p.reaped = true
	p.mu.Unlock()
	p.setExit(p.cmd.Wait())
	onDone()
	close(p.done)
}

// waitExit blocks until the leader has exited, without reaping it.
func (p *proc) waitExit() {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, p.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == nil {
			return
		}
		if err != unix.EINTR {
			// Cannot tell whether the pid is still ours: never signal it.
			p.log.Error("waitid", zap.Int("pid", p.pid), zap.Error(err))
			p.mu.Lock()
			p.reaped = true
			p.mu.Unlock()
			return
		}
	}
}

func (p *proc) setExit(err error) {
	st := p.cmd.ProcessState
	if st == nil {
		p.log.Error("wait", zap.Int("pid", p.pid), zap.Error(err))
		p.exitCode = -1
		return
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		p.exitCode, p.signal = -1, unix.SignalName(ws.Signal())
		return
	}
	p.exitCode = st.ExitCode()
}

// kill signals the whole group, but only while the leader is unreaped (so
// the group id cannot have been recycled).
func (p *proc) kill(sig unix.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return
	}
	if err := unix.Kill(-p.pid, sig); err != nil && err != unix.ESRCH {
		p.log.Warn("kill group", zap.Int("pgid", p.pid), zap.String("signal", unix.SignalName(sig)), zap.Error(err))
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

func (p *proc) escalate() {
	p.kill(unix.SIGTERM)
	t := time.NewTimer(p.grace)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
		p.kill(unix.SIGKILL)
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
