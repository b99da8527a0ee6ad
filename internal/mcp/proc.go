package mcp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
)

// stderrTail is how much of a server's stderr is kept, to say why it
// failed to start.
const stderrTail = 4 << 10

// proc is a stdio server's process. It runs in a session and process group
// of its own (Setsid: no controlling terminal, and the whole group can be
// signalled), with the daemon's scrubbed environment plus the one the
// client gave, in the session's directory, and never sees the daemon's
// stdin. Its exit is observed with waitid(WNOWAIT), so the leader stays an
// unreaped zombie holding the group id while leftovers of the group are
// killed; only then is it reaped, and no signal is sent to the group after
// that.
type proc struct {
	cmd    *exec.Cmd
	pid    int
	stdin  *os.File // our end of its stdin
	stdout *os.File // our end of its stdout

	exited chan struct{} // the leader exited (not yet reaped)
	reaped chan struct{} // reaped; waitErr is set

	mu      sync.Mutex
	gone    bool   // the group was killed after the leader's exit: signal no more
	tail    []byte // the last stderrTail bytes of stderr
	waitErr error

	stopOnce sync.Once
}

// startProc starts command with args in dir with env. The returned error
// is the start failure, as the user should read it.
func startProc(command string, args []string, dir string, env []string) (*proc, error) {
	cmd := exec.Command(command, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var files []*os.File // every end, closed on failure
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	inR, inW, err1 := pipe()
	outR, outW, err2 := pipe()
	errR, errW, err3 := pipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		closeAll()
		return nil, startErr{fmt.Errorf("cannot create pipes: %w", err)}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, startError(command, err)
	}
	inR.Close()
	outW.Close()
	errW.Close()
	p := &proc{cmd: cmd, pid: cmd.Process.Pid, stdin: inW, stdout: outR,
		exited: make(chan struct{}), reaped: make(chan struct{})}
	drained := make(chan struct{})
	go p.drain(errR, drained)
	go p.watch(drained)
	return p, nil
}

// startErr is a server that could not be started.
type startErr struct{ err error }

func (e startErr) Error() string { return e.err.Error() }
func (e startErr) Unwrap() error { return e.err }

// startError words a failure to start command.
func startError(command string, err error) error {
	var ee *exec.Error
	var pe *os.PathError
	switch {
	case errors.As(err, &ee):
		err = fmt.Errorf("cannot start %q: %w", command, ee.Err)
	case errors.As(err, &pe):
		err = fmt.Errorf("cannot start %q: %w", command, pe.Err)
	default:
		err = fmt.Errorf("cannot start %q: %w", command, err)
	}
	return startErr{err}
}

// drain reads stderr to its end, keeping the tail. It never fails, so the
// server never blocks on a full stderr pipe.
func (p *proc) drain(f *os.File, done chan<- struct{}) {
	defer close(done)
	defer f.Close()
	buf := make([]byte, 4<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			p.mu.Lock()
			p.tail = append(p.tail, buf[:n]...)
			if len(p.tail) > stderrTail {
				p.tail = append(p.tail[:0], p.tail[len(p.tail)-stderrTail:]...)
			}
			p.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// watch waits for the leader to exit, kills what is left of its group
// while the zombie still holds the group id, and reaps it.
func (p *proc) watch(drained <-chan struct{}) {
	waitLeaderExit(p.pid)
	close(p.exited)
	p.mu.Lock()
	_ = unix.Kill(-p.pid, unix.SIGKILL) // leftovers of the group
	p.gone = true
	p.mu.Unlock()
	// The group is dead, so stderr reaches EOF; bound the wait anyway
	// (a process that left the group may hold it).
	select {
	case <-drained:
	case <-time.After(time.Second):
	}
	err := p.cmd.Wait()
	p.mu.Lock()
	p.waitErr = err
	p.mu.Unlock()
	close(p.reaped)
}

// signal sends sig to the group while the leader is known not reaped.
func (p *proc) signal(sig unix.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.gone {
		_ = unix.Kill(-p.pid, sig)
	}
}

// stop ends the process the way every command ends: its stdin closes
// (the MCP way to ask a stdio server to exit) and its group gets TERM,
// then, after grace, KILL. It waits for the reap until ctx ends. Safe to
// call more than once and concurrently.
func (p *proc) stop(ctx context.Context, grace time.Duration) {
	p.stopOnce.Do(func() {
		_ = p.stdin.Close()
		p.signal(unix.SIGTERM)
		go func() {
			t := time.NewTimer(grace)
			defer t.Stop()
			select {
			case <-p.exited:
			case <-t.C:
				p.signal(unix.SIGKILL)
			}
		}()
	})
	select {
	case <-p.reaped:
	case <-ctx.Done():
	}
}

// failure is why the process failed, when it exited: its exit status and
// the last line of its stderr. "" while it runs.
func (p *proc) failure() string {
	select {
	case <-p.reaped:
	default:
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	msg := "the server exited"
	if p.waitErr != nil {
		msg += " (" + p.waitErr.Error() + ")"
	}
	if line := lastLine(string(p.tail)); line != "" {
		msg += ": " + line
	}
	return msg
}

// lastLine is the last non-empty line of s, valid UTF-8, at most 300
// bytes.
func lastLine(s string) string {
	s = strings.TrimRight(strings.ToValidUTF8(s, "\uFFFD"), "\r\n\t ")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	s = strings.TrimSpace(s)
	if len(s) > 300 {
		s = strings.ToValidUTF8(s[:300], "") + "…"
	}
	return s
}

// stdioTransport is an sdk.Transport that starts the server's process and
// speaks newline-delimited JSON over its stdin and stdout. started is told
// of the process as soon as it runs (so it is stopped however connecting
// ends); an error from it stops the process and fails the connection.
type stdioTransport struct {
	command string
	args    []string
	dir     string
	env     []string
	started func(*proc) error
}

// Connect implements sdk.Transport.
func (t *stdioTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	p, err := startProc(t.command, t.args, t.dir, t.env)
	if err != nil {
		return nil, err
	}
	if err := t.started(p); err != nil {
		p.stop(ctx, 0)
		p.stdout.Close()
		return nil, err
	}
	return (&sdk.IOTransport{Reader: p.stdout, Writer: p.stdin}).Connect(ctx)
}

// mergeEnv is base with overrides applied ("NAME=value"; a later entry
// for the same name wins), base's order kept and new names appended.
func mergeEnv(base, overrides []string) []string {
	out := append([]string(nil), base...)
	index := map[string]int{}
	for i, kv := range out {
		name, _, _ := strings.Cut(kv, "=")
		index[name] = i
	}
	for _, kv := range overrides {
		name, _, _ := strings.Cut(kv, "=")
		if i, ok := index[name]; ok {
			out[i] = kv
			continue
		}
		index[name] = len(out)
		out = append(out, kv)
	}
	return out
}
