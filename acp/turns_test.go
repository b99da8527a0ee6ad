package acp

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/acp/ingress"
)

// wire drives a registry the way the guard does: it opens prompts and
// cancels in wire order and hands each prompt's stamped meta to a handler.
type wire struct {
	r     *turnRegistry
	metas []map[string]any // per prompt, in wire order
	sids  []string
	turns []*turn // what each prompt's handler claimed
}

func newWire() *wire { return &wire{r: newTurnRegistry()} }

func (w *wire) prompt(sid string) int {
	tok := w.r.token()
	w.r.open(sid, tok)
	w.metas = append(w.metas, map[string]any{turnMetaKey: tok, "client": "kept"})
	w.sids = append(w.sids, sid)
	w.turns = append(w.turns, nil)
	return len(w.metas) - 1
}

func (w *wire) claim(i int) *turn {
	w.turns[i] = w.r.claim(w.sids[i], w.metas[i])
	return w.turns[i]
}

func cancelled(t *turn) bool { return t.ctx.Err() != nil }

// Whatever order the handlers claim their turns in, a cancel has cancelled
// exactly the prompts of its session before it on the wire.
func TestCancelBindsToThePromptsBeforeIt(t *testing.T) {
	orders := [][]int{{0, 1, 2, 3}, {3, 2, 1, 0}, {2, 0, 3, 1}, {1, 3, 0, 2}}
	for _, order := range orders {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			w := newWire()
			w.prompt("s")            // 0: before the cancel
			w.prompt("other")        // 1: another session
			w.r.cancelSession("s")   // the cancel
			w.prompt("s")            // 2: after it
			w.r.cancelSession("nop") // a cancel for no open session
			w.prompt("s")            // 3: after it too
			for _, i := range order {
				w.claim(i)
			}
			want := []bool{true, false, false, false}
			for i, tt := range w.turns {
				if cancelled(tt) != want[i] {
					t.Errorf("prompt %d: cancelled %v, want %v", i, cancelled(tt), want[i])
				}
				if tt.token == "" {
					t.Errorf("prompt %d got a fresh turn, not its own", i)
				}
			}
		})
	}
}

// The same, with handlers claiming on goroutines of their own while the
// wire goes on: the property the burst e2e test checks from outside.
func TestCancelBindingUnderConcurrentClaims(t *testing.T) {
	for round := range 200 {
		w := newWire()
		var want []bool
		for range 20 {
			w.prompt("s")
			want = append(want, false)
			if rand.IntN(3) == 0 {
				w.r.cancelSession("s")
				for j := range want {
					want[j] = true
				}
			}
		}
		var wg sync.WaitGroup
		for _, i := range rand.Perm(len(w.metas)) {
			wg.Go(func() { w.claim(i) })
		}
		wg.Wait()
		for i, tt := range w.turns {
			if cancelled(tt) != want[i] {
				t.Fatalf("round %d prompt %d: cancelled %v, want %v", round, i, cancelled(tt), want[i])
			}
		}
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// A session's turns start in wire order: each waits for the previous
// prompt's reply; other sessions do not wait.
func TestTurnsWaitForThePreviousReply(t *testing.T) {
	w := newWire()
	w.prompt("s")
	w.prompt("s")
	w.prompt("other")
	w.prompt("s")
	for i := range w.metas {
		w.claim(i)
	}
	first, second, other, third := w.turns[0], w.turns[1], w.turns[2], w.turns[3]
	if first.after != nil || other.after != nil {
		t.Fatal("the first prompt of a session waits for something")
	}
	if isClosed(second.after) || isClosed(third.after) {
		t.Fatal("a later prompt may start before the earlier ones were answered")
	}
	w.r.answered(first)
	second.waitPrevious() // returns: the first was answered
	if isClosed(third.after) {
		t.Fatal("the third prompt may start before the second was answered")
	}
	w.r.answered(second)
	third.waitPrevious()
	w.r.answered(second) // idempotent
	if !cancelled(first) || !cancelled(second) {
		t.Error("an answered turn's context is still live")
	}
}

func TestAnsweredTurnsLeaveTheRegistry(t *testing.T) {
	w := newWire()
	w.prompt("s")
	w.r.answered(w.claim(0))
	next := w.claim(w.prompt("s"))
	if next.after != nil {
		t.Error("a prompt after an answered one still waits")
	}
	w.r.cancelSession("s")
	if !cancelled(next) {
		t.Error("cancel missed the open turn")
	}
	w.r.answered(next)
	if len(w.r.byToken) != 0 || len(w.r.pending) != 0 {
		t.Errorf("registry not empty: %d tokens, %d sessions", len(w.r.byToken), len(w.r.pending))
	}
}

// A prompt the guard did not stamp (or whose token is spent or belongs to
// another session) gets a fresh turn, still reached by cancels and still in
// the session's order, and leaving the registry at release.
func TestClaimWithoutItsOwnToken(t *testing.T) {
	w := newWire()
	w.prompt("s")
	own := w.claim(0)
	tests := []struct {
		name string
		sid  string
		meta map[string]any
	}{
		{"no meta", "s", nil},
		{"no token", "s", map[string]any{"x": 1}},
		{"a spent token", "s", map[string]any{turnMetaKey: own.token}},
		{"another session's token", "x", map[string]any{turnMetaKey: w.r.token()}},
		{"not a string", "s", map[string]any{turnMetaKey: 1.0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fresh := w.r.claim(tt.sid, tt.meta)
			if fresh == own || fresh.token != "" {
				t.Fatal("claimed a turn that is not its own")
			}
			if _, left := tt.meta[turnMetaKey]; left {
				t.Error("the token stays in the prompt's meta")
			}
			if tt.sid == "s" && fresh.after != own.done {
				t.Error("a fresh turn is not chained after the open one")
			}
			w.r.cancelSession(tt.sid)
			if !cancelled(fresh) {
				t.Error("a cancel missed the fresh turn")
			}
			fresh.release()
			if slices.Contains(w.r.pending[tt.sid], fresh) {
				t.Error("a fresh turn is still open after release")
			}
			// Its done closes once the turn it follows was answered too.
			if tt.sid == "s" && isClosed(fresh.done) {
				t.Error("a fresh turn released before the one it follows reads as done")
			}
			if tt.sid != "s" && !isClosed(fresh.done) {
				t.Error("a fresh turn that follows none is not done after release")
			}
		})
	}
	w.r.answered(own)
}

func TestClaimTakesTheTokenOutOfMeta(t *testing.T) {
	w := newWire()
	w.prompt("s")
	w.claim(0)
	if _, ok := w.metas[0][turnMetaKey]; ok || w.metas[0]["client"] != "kept" {
		t.Errorf("meta after claim: %v", w.metas[0])
	}
}

func TestCancelAll(t *testing.T) {
	w := newWire()
	w.prompt("s")
	w.prompt("t")
	w.claim(0)
	w.r.cancelAll()
	w.claim(1)
	late := w.claim(w.prompt("s"))
	fresh := w.r.claim("u", nil)
	for i, tt := range append(w.turns, fresh) {
		if !cancelled(tt) {
			t.Errorf("turn %d not cancelled", i)
		}
	}
	if !cancelled(late) {
		t.Error("a turn opened after cancelAll is live")
	}
}

// release ends a claimed turn's context but keeps it open (and its
// successor waiting) until its reply is written.
func TestReleaseKeepsTheTurnUntilAnswered(t *testing.T) {
	w := newWire()
	w.prompt("s")
	w.prompt("s")
	first, second := w.claim(0), w.claim(1)
	first.release()
	if !cancelled(first) || isClosed(second.after) {
		t.Fatal("release answered the turn")
	}
	w.r.answered(first)
	second.waitPrevious() // returns now
}

// A prompt answered before the one it follows (the SDK rejected it while
// the earlier one ran) does not let the prompts after it start before the
// earlier one was answered.
func TestAnsweredOutOfOrderKeepsTheOrder(t *testing.T) {
	w := newWire()
	w.prompt("s")
	w.prompt("s") // rejected by the SDK: answered at once
	w.prompt("s")
	for i := range w.metas {
		w.claim(i)
	}
	first, rejected, third := w.turns[0], w.turns[1], w.turns[2]
	w.r.answered(rejected)
	if isClosed(third.after) {
		t.Fatal("the third prompt may start while the first still runs")
	}
	w.r.answered(first)
	third.waitPrevious() // returns once the first was answered
	later := w.claim(w.prompt("s"))
	if isClosed(later.after) {
		t.Fatal("a prompt opened after the answers may start before the third was answered")
	}
	w.r.answered(third)
	later.waitPrevious()
}

// openTurn reads only a prompt's session: its blocks are decoded once, by
// the SDK. A prompt with a block the SDK will reject still gets a turn,
// which its (error) reply ends.
func TestOpenTurnReadsOnlyTheSession(t *testing.T) {
	s := &Server{turns: newTurnRegistry(), calls: newPendingCalls(), log: zap.NewNop()}
	params := json.RawMessage(`{"sessionId":"s","prompt":[{"type":"text","text":5}]}`)
	v := s.openTurn(ingress.Message{Method: "session/prompt", ID: json.RawMessage("7"), Params: params})
	if v.Params == nil || len(s.turns.pending["s"]) != 1 {
		t.Fatalf("no turn opened for a prompt with a bad block (verdict %s)", v.Params)
	}
	s.calls.replied(json.RawMessage("7"), nil) // the SDK's error reply
	if len(s.turns.pending) != 0 || len(s.turns.byToken) != 0 {
		t.Errorf("the reply left the turn in the registry: %v", s.turns.pending)
	}
	// No prompt at all: the SDK rejects it before any handler; no turn.
	if v := s.openTurn(ingress.Message{Method: "session/prompt", ID: json.RawMessage("8"), Params: json.RawMessage(`{"sessionId":"s"}`)}); v.Params != nil {
		t.Errorf("a prompt without blocks was stamped: %s", v.Params)
	}
}
