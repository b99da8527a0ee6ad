package acp

import "testing"

func cancelled(t *turn) bool { return t.ctx.Err() != nil }

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// A cancel cancels exactly the prompts of its session opened before it on
// the wire, running or waiting, and none after it.
func TestCancelBindsToThePromptsBeforeIt(t *testing.T) {
	r := newTurnRegistry()
	before := r.open("s")
	other := r.open("other")
	r.cancelSession("s")
	after := r.open("s")
	r.cancelSession("nop") // a cancel for no open session
	later := r.open("s")
	for i, tc := range []struct {
		t    *turn
		want bool
	}{{before, true}, {other, false}, {after, false}, {later, false}} {
		if cancelled(tc.t) != tc.want {
			t.Errorf("turn %d: cancelled %v, want %v", i, cancelled(tc.t), tc.want)
		}
	}
}

// A session's turns start in wire order: each waits for the previous
// prompt's reply; other sessions do not wait.
func TestTurnsWaitForThePreviousReply(t *testing.T) {
	r := newTurnRegistry()
	first, second, other, third := r.open("s"), r.open("s"), r.open("other"), r.open("s")
	if first.after != nil || other.after != nil {
		t.Fatal("the first prompt of a session waits for something")
	}
	if isClosed(second.after) || isClosed(third.after) {
		t.Fatal("a later prompt may start before the earlier ones were answered")
	}
	r.answered(first)
	second.waitPrevious() // returns: the first was answered
	if isClosed(third.after) {
		t.Fatal("the third prompt may start before the second was answered")
	}
	r.answered(second)
	third.waitPrevious()
	r.answered(second) // idempotent
	if !cancelled(first) || !cancelled(second) {
		t.Error("an answered turn's context is still live")
	}
	r.answered(third)
	r.answered(other)
	if len(r.pending) != 0 {
		t.Errorf("registry not empty: %v", r.pending)
	}
}

// A prompt answered before the one it follows (its params were refused
// while the earlier one ran) does not let the prompts after it start
// before the earlier one was answered.
func TestAnsweredOutOfOrderKeepsTheOrder(t *testing.T) {
	r := newTurnRegistry()
	first, refused, third := r.open("s"), r.open("s"), r.open("s")
	r.answered(refused)
	if isClosed(third.after) {
		t.Fatal("the third prompt may start while the first still runs")
	}
	r.answered(first)
	third.waitPrevious() // returns once the first was answered
	later := r.open("s")
	if isClosed(later.after) {
		t.Fatal("a prompt opened after the answers may start before the third was answered")
	}
	r.answered(third)
	later.waitPrevious()
}

func TestCancelAll(t *testing.T) {
	r := newTurnRegistry()
	open := []*turn{r.open("s"), r.open("t")}
	r.cancelAll()
	open = append(open, r.open("s"), r.open("u"))
	for i, tt := range open {
		if !cancelled(tt) {
			t.Errorf("turn %d not cancelled", i)
		}
	}
}

// Preempt opens a prompt's turn from its one decode; a prompt whose params
// are refused opens none and carries its error to the handler.
func TestOpenPrompt(t *testing.T) {
	s := &Server{turns: newTurnRegistry()}
	for _, tc := range []struct {
		params string
		ok     bool
	}{
		{`{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}`, true},
		{`{"sessionId":"s","prompt":[{"type":"text","text":5}]}`, false},
		{`{"sessionId":"s"}`, false},
	} {
		pc := s.promptCall([]byte(tc.params))
		if (pc.err == nil) != tc.ok || (pc.turn != nil) != tc.ok {
			t.Errorf("%s: err %v, turn %v", tc.params, pc.err, pc.turn != nil)
		}
	}
	if n := len(s.turns.pending["s"]); n != 1 {
		t.Errorf("%d turns open, want 1", n)
	}
}
