package local

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor/engine"
)

// StderrTail is how much of a Program's stderr is kept, to say why it
// failed.
const StderrTail = 4 << 10

// Program is a long-running program the daemon talks to over its stdin and
// stdout (an MCP stdio server), run by the same group code as commands: the
// Spawner starts it in a session and process group of its own, from the
// spawn thread, never with the daemon's stdin; its exit is seen without
// reaping it (Process.Wait), so while the leftovers of its group are killed
// the zombie still holds the group id; only then is it reaped
// (Process.Release), and no signal is sent after that. Stop is the
// commands' kill path (engine.Escalate: TERM, grace, KILL to the group).
// Its stderr is drained for its whole life (the last StderrTail bytes are
// kept), so it never blocks on a full pipe.
//
// Known limits: as for commands, a process that leaves the group (setsid)
// escapes the kill; a SIGKILLed daemon leaves its programs running.
type Program struct {
	p      *Process
	stdin  *os.File      // our end of its stdin
	exited chan struct{} // the leader exited (not yet reaped)
	done   chan struct{} // reaped; exit is set

	mu   sync.Mutex
	tail []byte
	exit engine.Exit

	stopOnce sync.Once
}

// StartProgram starts name with args (name looked up in PATH when it has no
// slash, as os/exec does) in dir (empty: the daemon's) with env. Its error
// is the start failure: an *exec.Error for a name not found, else one
// wrapping the *fs.PathError of the exec or executor.ErrWorkdir for dir.
func (s *Spawner) StartProgram(name string, args []string, dir string, env []string) (*Program, error) {
	path := name
	if filepath.Base(name) == name {
		lp, err := exec.LookPath(name)
		if err != nil {
			return nil, err
		}
		path = lp
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, err
	}
	l := &Launch{Path: path, Args: append([]string{name}, args...), Dir: dir, Workdir: dir, Env: env,
		stdin: inR, close: []*os.File{inW}}
	p, err := s.Start(l)
	if err != nil {
		return nil, err
	}
	g := &Program{p: p, stdin: inW, exited: make(chan struct{}), done: make(chan struct{})}
	drained := make(chan struct{})
	go g.drain(p.Stderr(), drained)
	go g.watch(drained)
	return g, nil
}

// Stdin is the program's stdin (closing it is how an MCP stdio server is
// asked to exit).
func (g *Program) Stdin() io.WriteCloser { return g.stdin }

// Stdout is the program's stdout; it ends once the group is gone.
func (g *Program) Stdout() io.ReadCloser { return g.p.Stdout() }

// Pid is the leader's process id (the group id).
func (g *Program) Pid() int { return g.p.Pid() }

// Done is closed once the program exited, its group was killed and it was
// reaped.
func (g *Program) Done() <-chan struct{} { return g.done }

// Exit is how the program ended; ok is false until Done.
func (g *Program) Exit() (exit engine.Exit, ok bool) {
	select {
	case <-g.done:
	default:
		return engine.Exit{}, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.exit, true
}

// Stderr is the last StderrTail bytes the program wrote to stderr.
func (g *Program) Stderr() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return string(g.tail)
}

// Stop asks the program to end — its stdin closes, then the kill path:
// TERM to the group, grace, KILL — and waits for the reap until ctx ends.
// Safe to call more than once and concurrently.
func (g *Program) Stop(ctx context.Context, grace time.Duration) {
	g.stopOnce.Do(func() {
		_ = g.stdin.Close()
		go engine.Escalate(g.signal, g.exited, grace)
	})
	select {
	case <-g.done:
	case <-ctx.Done():
	}
}

// signal sends sig to the group while the leader is unreaped.
func (g *Program) signal(sig syscall.Signal) {
	if err := g.p.Signal(sig); err != nil {
		g.p.log.Warn("signal program group", zap.Int("pid", g.p.pid), zap.Error(err))
	}
}

// drain reads stderr to its end, keeping the tail.
func (g *Program) drain(f io.ReadCloser, done chan<- struct{}) {
	defer close(done)
	defer f.Close()
	buf := make([]byte, 4<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			g.mu.Lock()
			g.tail = append(g.tail, buf[:n]...)
			if len(g.tail) > StderrTail {
				g.tail = append(g.tail[:0], g.tail[len(g.tail)-StderrTail:]...)
			}
			g.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// watch waits for the leader's exit, kills what is left of its group while
// the zombie still holds the group id, and reaps it.
func (g *Program) watch(drained <-chan struct{}) {
	g.p.Wait()
	close(g.exited)
	g.signal(syscall.SIGKILL) // leftovers of the group
	// The group is dead, so stderr reaches EOF; bound the wait anyway (a
	// process that left the group may hold the pipe).
	t := time.NewTimer(time.Second)
	select {
	case <-drained:
	case <-t.C:
		_ = g.p.Stderr().Close()
		<-drained
	}
	t.Stop()
	exit := g.p.Release()
	g.mu.Lock()
	g.exit = exit
	g.mu.Unlock()
	close(g.done)
}
