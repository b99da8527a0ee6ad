package main

// A pseudo-terminal for the chat tests, opened by hand through /dev/ptmx
// (golang.org/x/sys/unix). The release branch brings a shared one
// (internal/acptest/pty_linux.go); this one has the same shape, so the tests
// can move to it once both are merged.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// term is a process whose controlling terminal, stdin, stdout and stderr
// are a fresh pseudo-terminal: the test types into it and reads what the
// terminal shows, echo included.
type term struct {
	t      testing.TB
	master *os.File
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // Wait's, once exited is closed

	mu      sync.Mutex
	out     bytes.Buffer
	seen    int           // expect's position in out
	changed chan struct{} // closed and replaced when out grows or the terminal closes
	closed  bool
}

// startTerm runs bin with args and env in a new session on a new
// pseudo-terminal, in dir. It fails the test (never skips) when no
// pseudo-terminal can be opened. The process is killed at the test's end.
func startTerm(t testing.TB, dir, bin string, env []string, args ...string) *term {
	t.Helper()
	master, slave, err := openPTY()
	if err != nil {
		t.Fatalf("pseudo-terminal: %v", err)
	}
	p := &term{t: t, master: master, exited: make(chan struct{}), changed: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.Env = env
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = slave, slave, slave
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	err = p.cmd.Start()
	slave.Close()
	if err != nil {
		master.Close()
		t.Fatalf("start %s on a pseudo-terminal: %v", bin, err)
	}
	go p.read()
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		master.Close()
		if t.Failed() {
			t.Logf("the terminal showed:\n%s", p.output())
		}
	})
	return p
}

// openPTY opens a pseudo-terminal pair (posix_openpt, unlockpt, ptsname by
// hand); neither end becomes the caller's controlling terminal.
func openPTY() (master, slave *os.File, err error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("unlockpt: %w", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("ptsname: %w", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return m, s, nil
}

func (p *term) read() {
	buf := make([]byte, 4096)
	for {
		n, err := p.master.Read(buf)
		p.mu.Lock()
		p.out.Write(buf[:n])
		if err != nil {
			p.closed = true // EIO once the last slave end closed
		}
		close(p.changed)
		p.changed = make(chan struct{})
		p.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// expect waits (up to 20 s) until the output after the previous match
// contains s, and moves past it.
func (p *term) expect(s string) {
	p.t.Helper()
	if err := p.expectErr(s, 20*time.Second); err != nil {
		p.t.Fatal(err)
	}
}

func (p *term) expectErr(s string, limit time.Duration) error {
	deadline := time.After(limit)
	for {
		p.mu.Lock()
		rest := p.out.String()[p.seen:]
		if i := strings.Index(rest, s); i >= 0 {
			p.seen += i + len(s)
			p.mu.Unlock()
			return nil
		}
		closed, changed := p.closed, p.changed
		p.mu.Unlock()
		if closed {
			return fmt.Errorf("the terminal closed before %q appeared", s)
		}
		select {
		case <-changed:
		case <-deadline:
			return fmt.Errorf("the terminal never showed %q", s)
		}
	}
}

// typeIn writes s to the terminal as if typed.
func (p *term) typeIn(s string) {
	p.t.Helper()
	if _, err := p.master.WriteString(s); err != nil {
		p.t.Fatalf("type into the terminal: %v", err)
	}
}

// wait waits (up to 20 s) for the process to exit and returns its exit
// code; the output is complete once it returns.
func (p *term) wait() int {
	p.t.Helper()
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		p.t.Fatal("the process did not exit")
	}
	var ee *exec.ExitError
	if p.err != nil && !errors.As(p.err, &ee) {
		p.t.Fatal(p.err)
	}
	// Everything written before the exit is read once the terminal closes.
	for deadline := time.After(10 * time.Second); ; {
		p.mu.Lock()
		closed, changed := p.closed, p.changed
		p.mu.Unlock()
		if closed {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			p.t.Fatal("the terminal stayed open after its process exited")
		}
	}
	return p.cmd.ProcessState.ExitCode()
}

// output is everything the terminal showed so far.
func (p *term) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}
