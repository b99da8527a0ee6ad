package main

import (
	"context"
	"strings"
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
// editor's hint shows): Ctrl-D, then it must exit 0. The hint is the last
// footer drawn, which may be one drawn before the last turn: a turn shorter
// than a frame never shows its own footer, so there is nothing to redraw.
func (p *term) quit() {
	p.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !inputBack(p.output()) {
		if time.Now().After(deadline) {
			p.t.Fatalf("the chat's input never came back:\n%s", p.output())
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.typeIn("\x04")
	if code := p.wait(); code != 0 {
		p.t.Errorf("exit %d after Ctrl-D", code)
	}
}

// inputBack reports whether the last footer the chat drew is the
// editor's hint, not a running turn's or Ctrl-C's.
func inputBack(out string) bool {
	hint := strings.LastIndex(out, "Enter sends")
	return hint >= 0 && hint > strings.LastIndex(out, "Ctrl-C cancels") && hint > strings.LastIndex(out, "Ctrl-C again")
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
