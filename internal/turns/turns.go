// Package turns binds each session/prompt to a turn of its own and each
// session/cancel to the prompts before it on the wire, for a connection
// that reads messages in order and handles them on goroutines of their own
// (acp's Preempt opens the turns in wire order; its handlers run them).
//
// Contract: Open is called in wire order, as each prompt is read; the turn
// it returns carries the prompt's context (Turn.Context) and its place in
// its session's order. CancelSession cancels every turn of the session
// opened so far and not yet answered — the prompts before the cancel on
// the wire, running or waiting, and none after it. A turn may start only
// once the previous prompt of its session was answered (WaitPrevious), so
// a session runs its prompts in the order they were sent and the reply to
// one is on the wire before the next one's first update; Answered ends a
// turn once its reply was written (or never will be). CancelAll cancels
// every turn, and every turn opened after it.
//
// Known limits: a turn is opened for a prompt whose session does not
// exist (it ends with its error reply); WaitPrevious does not watch the
// turn's context, so a cancelled turn still waits for its place.
package turns

import (
	"context"
	"sync"
)

// Registry binds each session/prompt to its own turn and each
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
type Registry struct {
	mu      sync.Mutex
	pending map[string][]*Turn // by session, in wire order: not yet answered
	closed  bool               // cancelAll was called: every turn starts cancelled
}

// Turn is one prompt's context and its place in its session's order.
type Turn struct {
	session string
	ctx     context.Context
	cancel  context.CancelFunc
	after   <-chan struct{} // the previous prompt of the session was answered; nil: none
	done    chan struct{}   // closed when this prompt and those before it were answered
}

// New is an empty registry.
func New() *Registry {
	return &Registry{pending: map[string][]*Turn{}}
}

// Open records a session/prompt seen on the wire and returns its turn,
// chained after the session's open ones.
func (r *Registry) Open(sessionID string) *Turn {
	r.mu.Lock()
	defer r.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	if r.closed {
		cancel()
	}
	t := &Turn{session: sessionID, ctx: ctx, cancel: cancel, done: make(chan struct{})}
	if q := r.pending[sessionID]; len(q) > 0 {
		t.after = q[len(q)-1].done
	}
	r.pending[sessionID] = append(r.pending[sessionID], t)
	return t
}

// Answered ends t's life in the registry once its prompt's reply was
// written (or will never be): the next prompt of its session may start —
// once the prompts before t were answered too. Idempotent.
func (r *Registry) Answered(t *Turn) {
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
func (t *Turn) finish() {
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

// WaitPrevious blocks until the previous prompt of t's session was
// answered. It does not watch t's context: a cancelled turn still waits, so
// that even its stop reason goes out in wire order.
func (t *Turn) WaitPrevious() {
	if t.after != nil {
		<-t.after
	}
}

// CancelSession cancels every turn of the session opened so far and not yet
// answered, running or still waiting to start.
func (r *Registry) CancelSession(sessionID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.pending[sessionID] {
		t.cancel()
	}
}

// CancelAll cancels every turn, and every turn opened later.
func (r *Registry) CancelAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for _, q := range r.pending {
		for _, t := range q {
			t.cancel()
		}
	}
}

// Context is the turn's context: cancelled by a cancel after its prompt on
// the wire, by CancelAll and once the turn was answered.
func (t *Turn) Context() context.Context { return t.ctx }

// Pending is how many turns of the session are open: opened and not yet
// answered.
func (r *Registry) Pending(sessionID string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending[sessionID])
}
