package acptest

import (
	"bytes"
	"context"
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

// Terminal is the controlling (master) side of a fresh pseudo-terminal:
// it keeps everything the terminal shows, for Expect and Output, and
// types into it. What runs on the other side — a process (PTY) or code
// under test given Slave — is the caller's.
type Terminal struct {
	t      testing.TB
	master *os.File

	mu      sync.Mutex
	out     bytes.Buffer
	seen    int           // Expect's position in out
	changed chan struct{} // closed and replaced when out grows or the terminal closes
	closed  bool          // the terminal's last slave end closed
}

// OpenTerminal opens a pseudo-terminal (OpenPTY) and starts reading what
// it shows; slave is its other end, which the caller hands to what it
// tests and closes. Both ends are closed when the test ends.
func OpenTerminal(t testing.TB) (term *Terminal, slave *os.File) {
	t.Helper()
	master, slave, err := OpenPTY()
	if err != nil {
		t.Fatalf("acptest: %v", err)
	}
	term = &Terminal{t: t, master: master, changed: make(chan struct{})}
	go term.read()
	t.Cleanup(func() {
		_ = slave.Close()
		_ = master.Close()
	})
	return term, slave
}

// PTY is a process running with a pseudo-terminal as its controlling
// terminal and its stdin, stdout and stderr: the test types into it and
// reads everything the terminal shows, echo included.
type PTY struct {
	*Terminal
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // Wait's, once exited is closed
}

// StartPTY runs bin with args in a new session whose controlling terminal
// is a fresh pseudo-terminal (opened through /dev/ptmx), with its
// environment made as Start makes it. The process is killed, if still
// running, when the test ends.
func StartPTY(t testing.TB, bin string, args []string, env []string) *PTY {
	t.Helper()
	return StartPTYIn(t, "", bin, args, env)
}

// StartPTYIn is StartPTY with the process's working directory dir ("" for
// the test's own).
func StartPTYIn(t testing.TB, dir, bin string, args []string, env []string) *PTY {
	t.Helper()
	term, slave := OpenTerminal(t)
	p := &PTY{Terminal: term, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = slave, slave, slave
	p.cmd.Env = childEnv(t, env)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	err := p.cmd.Start()
	_ = slave.Close() // the process holds it now
	if err != nil {
		t.Fatalf("acptest: start %s on a pty: %v", bin, err)
	}
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
		if t.Failed() {
			t.Logf("acptest: pty output:\n%s", p.Output())
		}
	})
	return p
}

// OpenPTY opens a new pseudo-terminal pair: posix_openpt, unlockpt and
// ptsname by hand (/dev/ptmx, TIOCSPTLCK, TIOCGPTN), 80 columns by 24
// rows as a terminal window starts. Neither end becomes the caller's
// controlling terminal.
func OpenPTY() (master, slave *os.File, err error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open /dev/ptmx: %w", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("unlock the pty: %w", err)
	}
	if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Col: 80, Row: 24}); err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("size the pty: %w", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("name the pty: %w", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("open the pty's slave: %w", err)
	}
	return m, s, nil
}

// Resize sets the terminal's size; the process gets SIGWINCH.
func (p *Terminal) Resize(cols, rows int) error {
	return unix.IoctlSetWinsize(int(p.master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(cols), Row: uint16(rows)})
}

// read copies what the terminal shows into out until the last slave end
// closes (EIO).
func (p *Terminal) read() {
	buf := make([]byte, 4096)
	for {
		n, err := p.master.Read(buf)
		p.mu.Lock()
		p.out.Write(buf[:n])
		if err != nil {
			p.closed = true
		}
		close(p.changed)
		p.changed = make(chan struct{})
		p.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// Expect waits until the output after the previous Expect's match contains
// s and moves past it. It fails when ctx ends or the terminal closes first.
func (p *Terminal) Expect(ctx context.Context, s string) error {
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
		case <-ctx.Done():
			return fmt.Errorf("waiting for %q: %w", s, ctx.Err())
		}
	}
}

// Await is Expect with a 20-second limit: the test fails, showing what
// the terminal showed, when s does not appear.
func (p *Terminal) Await(s string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.Expect(ctx, s); err != nil {
		p.t.Fatalf("acptest: %v; the terminal shows:\n%s", err, p.Output())
	}
}

// Type writes s to the terminal as if typed.
func (p *Terminal) Type(s string) {
	p.t.Helper()
	if _, err := p.master.WriteString(s); err != nil {
		p.t.Fatalf("acptest: type into the pty: %v", err)
	}
}

// Wait waits for the process to exit and returns its exit code (-1 when a
// signal ended it).
func (p *PTY) Wait(ctx context.Context) (int, error) {
	select {
	case <-p.exited:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	var ee *exec.ExitError
	if p.err != nil && !errors.As(p.err, &ee) {
		return 0, p.err
	}
	return p.cmd.ProcessState.ExitCode(), nil
}

// Output is everything the terminal showed so far. After Wait it is
// complete once the terminal closed: WaitClosed waits for that.
func (p *Terminal) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// WaitClosed waits (up to 10 s) until every holder of the terminal's slave
// end closed it, so Output is complete.
func (p *Terminal) WaitClosed() {
	p.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		p.mu.Lock()
		closed, changed := p.closed, p.changed
		p.mu.Unlock()
		if closed {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			p.t.Fatal("acptest: the pty stayed open 10 s after its process exited")
		}
	}
}
