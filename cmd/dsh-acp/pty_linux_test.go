package main

import (
	"context"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
)

// term is a process on a fresh pseudo-terminal (acptest.PTY) with the
// waits these tests use: 20 s for output and exit.
type term struct {
	*acptest.PTY
	t testing.TB
}

// startTerm runs bin with args and env in a new session on a new
// pseudo-terminal, in dir. The process is killed at the test's end.
func startTerm(t testing.TB, dir, bin string, env []string, args ...string) *term {
	t.Helper()
	return &term{PTY: acptest.StartPTYIn(t, dir, bin, args, env), t: t}
}

// expect waits (up to 20 s) until the output after the previous match
// contains s, and moves past it.
func (p *term) expect(s string) {
	p.t.Helper()
	p.Await(s)
}

// quit ends a chat the way a user does once its input is back (the
// editor's hint shows): Ctrl-D, then it must exit 0.
func (p *term) quit() {
	p.t.Helper()
	p.expect("Enter sends")
	p.typeIn("\x04")
	if code := p.wait(); code != 0 {
		p.t.Errorf("exit %d after Ctrl-D", code)
	}
}

func (p *term) expectErr(s string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	return p.Expect(ctx, s)
}

// typeIn writes s to the terminal as if typed.
func (p *term) typeIn(s string) { p.Type(s) }

// wait waits (up to 20 s) for the process to exit and returns its exit
// code; the output is complete once it returns.
func (p *term) wait() int {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	code, err := p.Wait(ctx)
	if err != nil {
		p.t.Fatalf("the process did not exit: %v", err)
	}
	p.WaitClosed()
	return code
}

// output is everything the terminal showed so far.
func (p *term) output() string { return p.Output() }
