package turns

import "testing"

func cancelled(t *Turn) bool { return t.ctx.Err() != nil }

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
	r := New()
	before := r.Open("s")
	other := r.Open("other")
	r.CancelSession("s")
	after := r.Open("s")
	r.CancelSession("nop") // a cancel for no open session
	later := r.Open("s")
	for i, tc := range []struct {
		t    *Turn
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
	r := New()
	first, second, other, third := r.Open("s"), r.Open("s"), r.Open("other"), r.Open("s")
	if first.after != nil || other.after != nil {
		t.Fatal("the first prompt of a session waits for something")
	}
	if isClosed(second.after) || isClosed(third.after) {
		t.Fatal("a later prompt may start before the earlier ones were answered")
	}
	r.Answered(first)
	second.WaitPrevious() // returns: the first was answered
	if isClosed(third.after) {
		t.Fatal("the third prompt may start before the second was answered")
	}
	r.Answered(second)
	third.WaitPrevious()
	r.Answered(second) // idempotent
	if !cancelled(first) || !cancelled(second) {
		t.Error("an answered turn's context is still live")
	}
	r.Answered(third)
	r.Answered(other)
	if len(r.pending) != 0 {
		t.Errorf("registry not empty: %v", r.pending)
	}
}

// A prompt answered before the one it follows (its params were refused
// while the earlier one ran) does not let the prompts after it start
// before the earlier one was answered.
func TestAnsweredOutOfOrderKeepsTheOrder(t *testing.T) {
	r := New()
	first, refused, third := r.Open("s"), r.Open("s"), r.Open("s")
	r.Answered(refused)
	if isClosed(third.after) {
		t.Fatal("the third prompt may start while the first still runs")
	}
	r.Answered(first)
	third.WaitPrevious() // returns once the first was answered
	later := r.Open("s")
	if isClosed(later.after) {
		t.Fatal("a prompt opened after the answers may start before the third was answered")
	}
	r.Answered(third)
	later.WaitPrevious()
}

func TestCancelAll(t *testing.T) {
	r := New()
	open := []*Turn{r.Open("s"), r.Open("t")}
	r.CancelAll()
	open = append(open, r.Open("s"), r.Open("u"))
	for i, tt := range open {
		if !cancelled(tt) {
			t.Errorf("turn %d not cancelled", i)
		}
	}
}
