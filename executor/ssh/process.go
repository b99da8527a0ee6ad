package ssh

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/engine"
)

// noiseLimit bounds what a login shell's rc files may print before the
// wrapper's first line; past it the channel is not ours to parse.
const noiseLimit = 64 << 10

// process is one remote command: a session channel running a launch.
type process struct {
	rc    *channel
	pid   int
	start string // the leader's start time, as the host's /proc says
	host  string
	sup   *supervisor

	stdout, stderr io.ReadCloser
	released       chan struct{} // closed by Release
	closeOnce      sync.Once
	releaseOnce    sync.Once
}

var _ engine.Process = (*process)(nil)

// start runs l on a new channel and returns once the wrapper reported the
// group (the command is about to be evaluated), or why it could not start.
func (c *conn) start(l *launch) (*process, error) {
	command, data := l.request(c.cmdline, c.direct)
	rc, err := c.exec(command)
	if err != nil {
		return nil, err
	}
	p := &process{rc: rc, host: c.d.target.Host, sup: c.sup, released: make(chan struct{})}
	if len(data) > 0 {
		go func() {
			if _, err := rc.ch.Write(data); err == nil {
				_ = rc.ch.CloseWrite()
			}
		}()
	}
	timer := time.AfterFunc(c.d.timing.start, func() { rc.ch.Close() })
	out := bufio.NewReaderSize(rc.ch, 4096)
	line, err := header(out, l.marker)
	timer.Stop()
	if err == nil {
		err = p.parseHeader(line, l)
	}
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = p.startFailure(c)
		}
		p.discard()
		return nil, err
	}
	p.stdout = &stream1{Reader: out, p: p}
	p.stderr = &stream1{Reader: &skipTo{r: rc.ch.Stderr(), marker: []byte(l.marker + "\n")}, p: p}
	return p, nil
}

// header reads lines until one starts with marker and returns the rest of
// it. Lines before it are a login shell's rc output and are dropped.
func header(r *bufio.Reader, marker string) (string, error) {
	seen := 0
	for {
		line, err := r.ReadString('\n')
		if rest, ok := strings.CutPrefix(line, marker+" "); ok && err == nil {
			return strings.TrimSuffix(rest, "\n"), nil
		}
		if err != nil {
			return "", err
		}
		if seen += len(line); seen > noiseLimit {
			return "", errors.New("the host printed too much before starting the command (login shell rc files?)")
		}
	}
}

// parseHeader turns the wrapper's first line into the pid or an error.
func (p *process) parseHeader(line string, l *launch) error {
	word, arg, _ := strings.Cut(line, " ")
	switch word {
	case "ok":
		pidText, start, _ := strings.Cut(arg, " ")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 1 || strings.ContainsAny(start, " \n") {
			return fmt.Errorf("the wrapper on %s reported a bad process group %q", p.host, arg)
		}
		p.pid, p.start = pid, start
		return nil
	case "workdir":
		errno := map[string]error{"ENOENT": syscall.ENOENT, "ENOTDIR": syscall.ENOTDIR, "EACCES": syscall.EACCES}[arg]
		if errno == nil {
			errno = errors.New(arg)
		}
		return fmt.Errorf("%w %q on %s: %w", executor.ErrWorkdir, l.dir, p.host, errno)
	}
	return fmt.Errorf("the command could not be started on %s (%s)", p.host, line)
}

// startFailure explains a channel that ended before the wrapper's header.
func (p *process) startFailure(c *conn) error {
	if c.isDead(time.Second) {
		return fmt.Errorf("ssh %s: the connection closed before the command started (%v)", c.d.target.Addr(), c.reason())
	}
	status := "no exit status"
	select {
	case <-p.rc.exited:
		if p.rc.got {
			status = fmt.Sprintf("exit status %d%s", p.rc.status, p.rc.signal)
		}
	case <-time.After(2 * time.Second):
	}
	var msg bytes.Buffer
	t := time.AfterFunc(2*time.Second, p.discard) // a job may hold stderr open
	_, _ = io.Copy(&msg, io.LimitReader(p.rc.ch.Stderr(), 512))
	t.Stop()
	return fmt.Errorf("the command could not be started on %s (%s): %s", p.host, status, strings.TrimSpace(msg.String()))
}

func (p *process) Stdout() io.ReadCloser { return p.stdout }
func (p *process) Stderr() io.ReadCloser { return p.stderr }

// Wait returns when the host reported the leader's exit (exit-status or
// exit-signal), or the channel closed without one.
func (p *process) Wait() { <-p.rc.exited }

// Signal asks the connection's supervisor to send sig to the group. It
// never blocks: the line is queued. It works after the leader exited too
// (the leftovers of a finished command), until Release.
func (p *process) Signal(sig syscall.Signal) error {
	var op string
	switch sig {
	case syscall.SIGTERM:
		op = "T"
	case syscall.SIGKILL:
		op = "K"
	default:
		return fmt.Errorf("signal %v is not supported over ssh", sig)
	}
	select {
	case <-p.released:
		return nil
	default:
	}
	p.sup.send(fmt.Sprintf("%s %d %s", op, p.pid, p.start))
	return nil
}

// Release closes the channel and returns how the command ended.
func (p *process) Release() engine.Exit {
	p.releaseOnce.Do(func() {
		close(p.released)
		p.sup.send(fmt.Sprintf("R %d %s", p.pid, p.start))
	})
	p.discard()
	rc := p.rc
	switch {
	case rc.got && rc.signal != "":
		return engine.Exit{Code: -1, Signal: rc.signal}
	case rc.got:
		return engine.Exit{Code: rc.status}
	case rc.c.isDead(2 * time.Second):
		return engine.Exit{Code: -1, Err: rc.c.lost()}
	}
	return engine.Exit{Code: -1, Err: fmt.Errorf("the host %s ended the command's session without an exit status", p.host)}
}

func (p *process) ID() string { return fmt.Sprintf("%s pid %d", p.host, p.pid) }

// discard closes the channel (once).
func (p *process) discard() { p.closeOnce.Do(func() { p.rc.ch.Close() }) }

// stream1 is one output stream; Close closes the whole channel, which
// ends the pending reads of both streams.
type stream1 struct {
	io.Reader
	p *process
}

func (s *stream1) Close() error {
	s.p.discard()
	return nil
}

// skipTo drops what comes before the first marker line (a login shell's rc
// output on stderr) and passes everything after it. Without a marker
// within noiseLimit bytes, or at EOF before one, it passes everything.
type skipTo struct {
	r      io.Reader
	marker []byte
	buf    []byte
	found  bool
}

func (s *skipTo) Read(p []byte) (int, error) {
	for !s.found {
		chunk := make([]byte, 4096)
		n, err := s.r.Read(chunk)
		s.buf = append(s.buf, chunk[:n]...)
		if i := bytes.Index(s.buf, s.marker); i >= 0 {
			s.buf, s.found = s.buf[i+len(s.marker):], true
			break
		}
		if err != nil || len(s.buf) > noiseLimit {
			s.found = true
			if len(s.buf) == 0 {
				return 0, err
			}
		}
	}
	if len(s.buf) > 0 {
		n := copy(p, s.buf)
		s.buf = s.buf[n:]
		return n, nil
	}
	return s.r.Read(p)
}
