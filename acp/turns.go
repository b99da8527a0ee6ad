package acp

import (
	"context"
	"sync"
)

// turnRegistry binds each session/prompt to its own turn and each
// session/cancel to the prompts before it on the wire.
//
// The connection's Preempter sees every message in wire order. For a
// prompt it opens the prompt's turn and hands it to the prompt's handler
// with the request (rpc.Request.State): no token travels in the client's
// data. A cancel cancels every turn of its session opened so far and not
// yet answered: the prompts before it on the wire, and none after.
//
// The turns of one session are chained in wire order: a turn may start
// only once the previous prompt of its session was answered (its reply
// written), so a session runs its prompts in the order they were sent, and
// the reply to one is on the wire before the next one's first update.
type turnRegistry struct {
	mu      sync.Mutex
	pending map[string][]*turn // by session, in wire order: not yet answered
	closed  bool               // cancelAll was called: every turn starts cancelled
}

// turn is one prompt's context and its place in its session's order.
type turn struct {
	session string
	ctx     context.Context
	cancel  context.CancelFunc
	after   <-chan struct{} // the previous prompt of the session was answered; nil: none
	done    chan struct{}   // closed when this prompt and those before it were answered
}

func newTurnRegistry() *turnRegistry {
	return &turnRegistry{pending: map[string][]*turn{}}
}

// open records a session/prompt seen on the wire and returns its turn,
// chained after the session's open ones.
func (r *turnRegistry) open(sessionID string) *turn {
	r.mu.Lock()
	defer r.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	if r.closed {
		cancel()
	}
	t := &turn{session: sessionID, ctx: ctx, cancel: cancel, done: make(chan struct{})}
	if q := r.pending[sessionID]; len(q) > 0 {
		t.after = q[len(q)-1].done
	}
	r.pending[sessionID] = append(r.pending[sessionID], t)
	return t
}

// answered ends t's life in the registry once its prompt's reply was
// written (or will never be): the next prompt of its session may start —
// once the prompts before t were answered too. Idempotent.
func (r *turnRegistry) answered(t *turn) {
	t.cancel()
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.pending[t.session]
	for i, x := range q {
		if x != t {
			continue
		}
		q = append(q[:i:i], q[i+1:]...)
		if len(q) == 0 {
			delete(r.pending, t.session)
		} else {
			r.pending[t.session] = q
		}
		t.finish()
		return
	}
}

// finish closes t.done once the prompts before t were answered: done means
// that t and every earlier prompt of its session were.
func (t *turn) finish() {
	if t.after != nil {
		select {
		case <-t.after:
		default: // answered before the prompt it follows
			go func() {
				<-t.after
				close(t.done)
			}()
			return
		}
	}
	close(t.done)
}

// waitPrevious blocks until the previous prompt of t's session was
// answered. It does not watch t's context: a cancelled turn still waits, so
// that even its stop reason goes out in wire order.
func (t *turn) waitPrevious() {
	if t.after != nil {
		<-t.after
	}
}

// cancelSession cancels every turn of the session opened so far and not yet
// answered, running or still waiting to start.
func (r *turnRegistry) cancelSession(sessionID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.pending[sessionID] {
		t.cancel()
	}
}

// cancelAll cancels every turn, and every turn opened later.
func (r *turnRegistry) cancelAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for _, q := range r.pending {
		for _, t := range q {
			t.cancel()
		}
	}
}
