package acp

import (
	"context"
	"strconv"
	"sync"
)

// turnMetaKey is the _meta entry in which the guard stamps a prompt's turn
// token before the SDK sees the prompt. The Prompt handler takes it out
// again; nothing else reads it.
const turnMetaKey = "dsh-acp/turn"

// turnRegistry binds each session/prompt to its own turn and each
// session/cancel to the prompts before it on the wire, whatever order the
// SDK runs its handler goroutines in.
//
// The ingress guard reports every message in wire order before the SDK sees
// it. For a prompt, open creates the prompt's turn and returns its token,
// which the guard stamps into the prompt's params (_meta[turnMetaKey]); the
// Prompt handler claims exactly that turn by the token. A cancel cancels
// every turn of its session opened so far and not yet answered: the prompts
// before it on the wire, and none after. The SDK's own cancellation (which
// hits whichever prompt its notification goroutine finds running) is not
// used.
//
// The turns of one session are chained in wire order: a turn may start only
// once the previous prompt of its session was answered (its reply written),
// so a session runs its prompts in the order they were sent, and the reply
// to one is on the wire before the next one's first update.
//
// A turn leaves the registry when its prompt is answered (answered, called
// by the reply tracker) — also a prompt the SDK rejected before any handler
// ran.
type turnRegistry struct {
	mu      sync.Mutex
	next    uint64
	byToken map[string]*turn
	pending map[string][]*turn // by session, in wire order: not yet answered
	closed  bool               // cancelAll was called: every turn starts cancelled
}

// turn is one prompt's context and its place in its session's order.
type turn struct {
	token   string // "" for a turn the guard did not open
	session string
	ctx     context.Context
	cancel  context.CancelFunc
	after   <-chan struct{} // the previous prompt of the session was answered; nil: none
	done    chan struct{}   // closed when this prompt was answered
	claimed bool

	reg *turnRegistry
}

func newTurnRegistry() *turnRegistry {
	return &turnRegistry{byToken: map[string]*turn{}, pending: map[string][]*turn{}}
}

// token returns a new turn token, never returned before. The guard stamps
// it into the prompt, then opens the turn with it: a turn is opened only
// for a prompt that will carry its token, or its handler would wait for
// itself (see claim).
func (r *turnRegistry) token() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	return strconv.FormatUint(r.next, 10)
}

// open records a session/prompt seen on the wire, carrying token, and
// returns its turn.
func (r *turnRegistry) open(sessionID, token string) *turn {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.newTurnLocked(sessionID, token)
	r.byToken[token] = t
	return t
}

// newTurnLocked creates a turn chained after the session's open ones.
func (r *turnRegistry) newTurnLocked(sessionID, token string) *turn {
	ctx, cancel := context.WithCancel(context.Background())
	if r.closed {
		cancel()
	}
	t := &turn{token: token, session: sessionID, ctx: ctx, cancel: cancel, done: make(chan struct{}), reg: r}
	if q := r.pending[sessionID]; len(q) > 0 {
		t.after = q[len(q)-1].done
	}
	r.pending[sessionID] = append(r.pending[sessionID], t)
	return t
}

// claim returns the turn whose token the guard stamped into meta (and takes
// the token out of meta). A prompt without a token the registry knows for
// that session — one that did not pass through the guard, or one whose
// token was already claimed — gets a fresh turn, chained after the session's
// open ones like any other. release must be called when the handler ends.
func (r *turnRegistry) claim(sessionID string, meta map[string]any) *turn {
	token, _ := meta[turnMetaKey].(string)
	delete(meta, turnMetaKey)
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.byToken[token]; t != nil && !t.claimed && t.session == sessionID {
		t.claimed = true
		return t
	}
	t := r.newTurnLocked(sessionID, "")
	t.claimed = true
	return t
}

// answered ends t's life in the registry once its prompt's reply was written
// (or will never be): the next prompt of its session may start — once the
// prompts before t were answered too, for a prompt answered out of order
// (one the SDK rejected while an earlier one ran). Idempotent.
func (r *turnRegistry) answered(t *turn) {
	t.cancel()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removeLocked(t)
}

func (r *turnRegistry) removeLocked(t *turn) {
	q := r.pending[t.session]
	for i, x := range q {
		if x == t {
			q = append(q[:i:i], q[i+1:]...)
			if len(q) == 0 {
				delete(r.pending, t.session)
			} else {
				r.pending[t.session] = q
			}
			t.finish()
			break
		}
	}
	if t.token != "" && r.byToken[t.token] == t {
		delete(r.byToken, t.token)
	}
}

// finish closes t.done once the prompts before t were answered: done means
// that t and every earlier prompt of its session were, so a later prompt
// chained after t never starts before an earlier one was answered.
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

// release is called when t's handler returns: its context ends. A turn the
// guard did not open leaves the registry now (no reply tracker knows it); a
// guard-opened one leaves when its reply is written.
func (t *turn) release() {
	t.cancel()
	if t.token == "" {
		t.reg.answered(t)
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

// cancelAll cancels every turn, and every turn opened or claimed later.
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
