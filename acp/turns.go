package acp

import (
	"context"
	"sync"
)

// turnRegistry binds session/cancel to the turns that were in flight when the
// cancel arrived in wire order. The ingress guard reports each message
// synchronously, before the SDK sees it: a session/prompt enqueues a turn
// context, a session/cancel cancels every turn enqueued for that session so
// far. The Prompt handler later claims its turn in FIFO order. The SDK's own
// cancellation (which can hit the NEXT prompt when cancel and prompt arrive
// back to back) is ignored.
type turnRegistry struct {
	mu      sync.Mutex
	pending map[string][]*turn // by session id, in wire order, not yet claimed
	active  map[string][]*turn // claimed and running
	closed  bool
}

type turn struct {
	ctx    context.Context
	cancel context.CancelFunc
}

func newTurnRegistry() *turnRegistry {
	return &turnRegistry{pending: map[string][]*turn{}, active: map[string][]*turn{}}
}

// enqueue records a session/prompt seen on the wire.
func (r *turnRegistry) enqueue(sessionID string) {
	ctx, cancel := context.WithCancel(context.Background())
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		cancel()
	}
	r.pending[sessionID] = append(r.pending[sessionID], &turn{ctx: ctx, cancel: cancel})
}

// claim takes the oldest enqueued turn of the session, or a fresh one when
// the prompt did not pass through the guard. release must be called when
// the turn ends.
func (r *turnRegistry) claim(sessionID string) (ctx context.Context, release func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var t *turn
	if q := r.pending[sessionID]; len(q) > 0 {
		t = q[0]
		r.pending[sessionID] = q[1:]
		if len(q) == 1 {
			delete(r.pending, sessionID)
		}
	} else {
		ctx, cancel := context.WithCancel(context.Background())
		t = &turn{ctx: ctx, cancel: cancel}
		if r.closed {
			cancel()
		}
	}
	r.active[sessionID] = append(r.active[sessionID], t)
	return t.ctx, func() { r.release(sessionID, t) }
}

func (r *turnRegistry) release(sessionID string, t *turn) {
	t.cancel()
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.active[sessionID]
	for i, x := range q {
		if x == t {
			q = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(q) == 0 {
		delete(r.active, sessionID)
	} else {
		r.active[sessionID] = q
	}
}

// cancelSession cancels every turn of the session seen so far, running or
// still waiting to be claimed.
func (r *turnRegistry) cancelSession(sessionID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.pending[sessionID] {
		t.cancel()
	}
	for _, t := range r.active[sessionID] {
		t.cancel()
	}
}

// cancelAll cancels every turn, and every turn enqueued or claimed later.
func (r *turnRegistry) cancelAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for _, q := range r.pending {
		for _, t := range q {
			t.cancel()
		}
	}
	for _, q := range r.active {
		for _, t := range q {
			t.cancel()
		}
	}
}
