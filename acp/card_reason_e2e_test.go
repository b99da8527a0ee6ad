package acp_test

import (
	"context"
	"encoding/json"
	"strings"
	"syscall"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
	"github.com/dsh-acp/dsh-acp/presentation"
)

// Zed draws a call that has a terminal as its terminal only: whatever the
// user must know about a call that did not run normally is the last line of
// the terminal's output. These tests read that line off the wire.

// terminalText is everything a card's terminal received.
func (c *card) terminalText() string { return strings.Join(c.outputs, "") }

// wantReason fails unless the card's terminal output ends with the reason
// line (presentation.ReasonPrefix and a text containing want), and the
// card ended failed.
func wantReason(t *testing.T, c *card, want string) {
	t.Helper()
	if c.open.Meta.Info == nil {
		t.Fatalf("card %s is not a terminal card: %+v", c.open.ToolCallID, c.open)
	}
	out := c.terminalText()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	last := lines[len(lines)-1]
	t.Logf("last terminal line: %s", last)
	if !strings.HasPrefix(last, presentation.ReasonPrefix) || !strings.Contains(last, want) || !strings.HasSuffix(out, "\n") {
		t.Errorf("terminal output %q does not end with a %q line saying %q", out, presentation.ReasonPrefix, want)
	}
	if c.final == nil || c.final.Status != "failed" || c.final.Meta.Exit == nil {
		t.Errorf("card ends %+v, want failed with terminal_exit", c.final)
	}
}

func TestReasonDeclinedByTheUser(t *testing.T) {
	p := startPermDaemon(t, "reject_once")
	p.runBash("call_1", "touch nope")
	c := p.card(t, "call_1")
	wantReason(t, c, "declined by the user")
	// The model still reads its own, longer instruction.
	if got := p.toolResult(t, "call_1"); !strings.Contains(got, "Do not retry it") {
		t.Errorf("model read %q", got)
	}
}

func TestReasonReadOnlyDenial(t *testing.T) {
	p := startPermDaemon(t, "allow_once", "DSH_MODE=read-only")
	p.runBash("call_1", "touch nope")
	if n := len(p.questions()); n != 0 {
		t.Errorf("%d questions in read-only mode", n)
	}
	c := p.card(t, "call_1")
	wantReason(t, c, "denied in read-only mode")
	if c.open.Status != "in_progress" {
		t.Errorf("a call nobody is asked about opens %q", c.open.Status)
	}
}

func TestReasonMissingWorkdir(t *testing.T) {
	p := startPermDaemon(t, "reject_once")
	p.model.Push(
		llmtest.Calls(llmtest.Call{ID: "call_1", Name: "bash", Args: `{"command":"ls","description":"List","workdir":"no-such-dir"}`}),
		llmtest.Reply("done"),
	)
	p.prompt(p.sid, "list it")
	wantReason(t, p.card(t, "call_1"), "no-such-dir")
}

func TestReasonCancelledQuestion(t *testing.T) {
	p := startPermDaemon(t, "cancelled")
	p.runBash("call_1", "touch nope")
	wantReason(t, p.card(t, "call_1"), "cancelled: the user stopped the turn before this call ran")
}

// An asked call's very first update is its card opening pending: nothing
// says it runs before the user answered.
func TestAskedCallOpensPending(t *testing.T) {
	p := startPermDaemon(t, "reject_once")
	p.runBash("call_1", "touch nope")
	for _, u := range decodeUpdates(t, p.Updates(p.sid)) {
		if u.ToolCallID != "call_1" {
			continue
		}
		if u.Kind != "tool_call" || u.Status != "pending" {
			t.Fatalf("first update of the asked call: %+v, want tool_call pending", u)
		}
		break
	}
	var statuses []string
	c := p.card(t, "call_1")
	for _, u := range c.updates {
		if u.Status != "" {
			statuses = append(statuses, u.Status)
		}
	}
	if strings.Join(statuses, ",") != "failed" {
		t.Errorf("a rejected call went through %v, want only failed after pending", statuses)
	}
}

// startCommand sends `!command` as a prompt and returns the reply channel
// (the stop reason, or the error text), once the card opened.
func startCommand(t *testing.T, d *daemon, sid, command string) <-chan string {
	t.Helper()
	reply := make(chan string, 1)
	go func() {
		var r struct {
			StopReason string `json:"stopReason"`
		}
		if err := d.Call(context.Background(), "session/prompt", promptParams(sid, "!"+command), &r); err != nil {
			r.StopReason = err.Error()
		}
		reply <- r.StopReason
	}()
	if _, err := d.WaitUpdate(ctxT(t), sid, func(u json.RawMessage) bool { return acptest.UpdateKind(u) == "tool_call" }); err != nil {
		t.Fatal(err)
	}
	return reply
}

// wantSignal fails unless the card ended failed with terminal_exit.signal
// set to sig and no exit code.
func wantSignal(t *testing.T, c *card, sig string) {
	t.Helper()
	if c.final == nil || c.final.Status != "failed" || c.final.Meta.Exit == nil {
		t.Fatalf("card ends %+v, want failed with terminal_exit", c.final)
	}
	e := c.final.Meta.Exit
	if e.Signal == nil || *e.Signal != sig || e.ExitCode != nil {
		t.Errorf("terminal_exit %+v (signal %v), want signal %s and no exit code", e, optString(e.Signal), sig)
	}
}

// A cancelled command's card says why in its terminal and carries the
// signal that ended it.
func TestCancelledCardCarriesSignalAndReason(t *testing.T) {
	d := startDaemon(t, acptest.ZedCapabilities(), nil)
	sid := d.newSession(t.TempDir())
	marker := acptest.NewMarker()
	reply := startCommand(t, d, sid, "export M="+marker+"; echo started; sleep 600")
	waitMarkedProcs(t, marker, 1)
	// Running, not just spawned: a sandbox still being set up has no
	// command for the TERM to reach (executor/sandbox's known limits).
	d.waitFor(func() bool { return d.count(sid, "tool_call_update", "started") > 0 })
	if err := d.Notify(ctxT(t), "session/cancel", map[string]any{"sessionId": sid}); err != nil {
		t.Fatal(err)
	}
	if got := <-reply; got != "cancelled" {
		t.Fatalf("stopReason %q", got)
	}
	c := onlyCard(t, decodeUpdates(t, d.Updates(sid)))
	wantSignal(t, c, "SIGTERM")
	wantReason(t, c, "cancelled: the user stopped the turn while this call ran")
}

// A command that outlives its timeout is TERMed: the card carries the
// signal and says it timed out.
func TestTimedOutCardCarriesSignalAndReason(t *testing.T) {
	d := startDaemon(t, acptest.ZedCapabilities(), []string{"--timeout", "300ms"})
	sid := d.newSession(t.TempDir())
	if got := d.prompt(sid, "!sleep 30"); got != "end_turn" {
		t.Fatalf("stopReason %q", got)
	}
	c := onlyCard(t, decodeUpdates(t, d.Updates(sid)))
	wantSignal(t, c, "SIGTERM")
	wantReason(t, c, "timed out after 300ms")
}

// A command that ignores TERM is KILLed after the grace: the card says
// SIGKILL.
func TestKilledAfterGraceCardCarriesSIGKILL(t *testing.T) {
	d := startDaemon(t, acptest.ZedCapabilities(), []string{"--timeout", "300ms", "--kill-grace", "200ms"})
	sid := d.newSession(t.TempDir())
	if got := d.prompt(sid, "!trap '' TERM; sleep 30"); got != "end_turn" {
		t.Fatalf("stopReason %q", got)
	}
	wantSignal(t, onlyCard(t, decodeUpdates(t, d.Updates(sid))), "SIGKILL")
}

// Shutdown (SIGTERM to the daemon) ends a running command's card with the
// signal that killed it before the daemon exits.
func TestShutdownCardCarriesSignal(t *testing.T) {
	d := startDaemon(t, acptest.ZedCapabilities(), nil)
	sid := d.newSession(t.TempDir())
	marker := acptest.NewMarker()
	startCommand(t, d, sid, "export M="+marker+"; echo started; sleep 600")
	waitMarkedProcs(t, marker, 1)
	// Running, not just spawned (see TestCancelledCardCarriesSignalAndReason).
	d.waitFor(func() bool { return d.count(sid, "tool_call_update", "started") > 0 })
	if err := syscall.Kill(d.Pid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := d.Wait(ctxT(t)); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	wantSignal(t, onlyCard(t, decodeUpdates(t, d.Updates(sid))), "SIGTERM")
}
