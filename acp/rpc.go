package acp

// The RPC layer between the ingress guard and the SDK: what the guard's
// observer does with each message in wire order, which requests still await
// their replies, and which notifications the SDK's bounded queue may take.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"
	"strconv"
	"sync"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/acp/ingress"
)

// hooks are seams for the package's own tests; Serve installs none, and
// nothing on the wire can set them.
type hooks struct {
	// beforeDraw runs on the session/load drawing goroutine before each
	// event is drawn.
	beforeDraw func()
	// sdkInput wraps what the SDK reads (the guard's forwarded lines).
	sdkInput func(io.Reader) io.Reader
	// sdkInitialize leaves every initialize request to the SDK.
	sdkInitialize bool
}

// observe runs on the guard's goroutine, in wire order, before the SDK sees
// the message, and says what the guard forwards.
func (s *Server) observe(m ingress.Message) ingress.Verdict {
	if m.Method != sdk.AgentMethodInitialize {
		s.begin()
	}
	switch {
	case m.IsResponse():
		return ingress.Verdict{}
	case m.IsNotification():
		return s.admit(m)
	}
	switch m.Method {
	case sdk.AgentMethodInitialize:
		if !s.hooks.sdkInitialize && s.answerInitialize(m) { // see initialize.go
			return ingress.Verdict{Answered: true}
		}
		s.noteCapabilities(m.Params)
	case sdk.AgentMethodSessionPrompt:
		return s.openTurn(m)
	case sdk.AgentMethodSessionNew, sdk.AgentMethodSessionLoad, sdk.AgentMethodSessionResume:
		s.calls.add(m.ID, s.afterOpened(m)) // updates that must follow the reply (see afterreply.go)
		return ingress.Verdict{}
	case sdk.AgentMethodSessionClose:
		if id := sessionIDOf(m.Params); id != "" {
			s.turns.cancelSession(id)
		}
	}
	s.calls.add(m.ID, nil)
	return ingress.Verdict{}
}

// noteCapabilities records the client's capabilities from an initialize
// request as it arrives, so every session/new behind it on the wire sees
// them, however the SDK schedules the two handlers.
func (s *Server) noteCapabilities(params json.RawMessage) {
	var p sdk.InitializeRequest
	if json.Unmarshal(params, &p) != nil || p.Validate() != nil {
		return // the SDK rejects it before any handler runs
	}
	s.noteCaps(p)
}

// openTurn opens a prompt's turn and stamps its token into the prompt. It
// reads only the prompt's session (and that it has a prompt: the SDK
// requires one): the content blocks are decoded once, by the SDK. A prompt
// the SDK still rejects (a bad block) is answered at once with an error,
// which ends its turn without letting later prompts of its session start
// before the earlier ones were answered (see turnRegistry.answered).
func (s *Server) openTurn(m ingress.Message) ingress.Verdict {
	var p struct {
		SessionID string          `json:"sessionId"`
		Prompt    json.RawMessage `json:"prompt"`
	}
	if json.Unmarshal(m.Params, &p) != nil || len(p.Prompt) == 0 || string(p.Prompt) == "null" {
		s.calls.add(m.ID, nil) // the SDK rejects it before any handler runs
		return ingress.Verdict{}
	}
	token := s.turns.token()
	params, err := ingress.SetMeta(m.Params, turnMetaKey, json.RawMessage(strconv.Quote(token)))
	if err != nil { // unreachable: the params decoded as a prompt
		s.log.Error("cannot stamp a prompt's turn", zap.String("id", string(m.ID)), zap.Error(err))
		s.calls.add(m.ID, nil)
		return ingress.Verdict{}
	}
	t := s.turns.open(p.SessionID, token)
	s.calls.add(m.ID, func(json.RawMessage) { s.turns.answered(t) })
	return ingress.Verdict{Params: params}
}

// admit decides whether a notification reaches the SDK. Only session/cancel
// has a handler, and its work is done here, in wire order; the SDK's copy is
// forwarded while its queue has room, at most one per session at a time.
// Every other notification is dropped with a counted warning — except
// $/cancel_request, which the SDK handles as it reads it, outside its queue.
func (s *Server) admit(m ingress.Message) ingress.Verdict {
	switch m.Method {
	case sdk.AgentMethodSessionCancel:
		var p sdk.CancelNotification
		if json.Unmarshal(m.Params, &p) != nil || p.Validate() != nil {
			s.gate.drop("invalid session/cancel", m.Method)
			return ingress.Verdict{Drop: true}
		}
		s.turns.cancelSession(string(p.SessionId))
		return ingress.Verdict{Drop: !s.gate.admitCancel(string(p.SessionId))}
	case "$/cancel_request":
		return ingress.Verdict{}
	}
	s.gate.drop("no handler", m.Method)
	return ingress.Verdict{Drop: true}
}

func sessionIDOf(params json.RawMessage) string {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(params, &p)
	return p.SessionID
}

// maxQueuedNotifications bounds the notifications forwarded to the SDK and
// not yet handled, well below its queue's capacity (1024), whose overflow
// closes the connection.
const maxQueuedNotifications = 256

// notificationGate admits notifications into the SDK's queue under
// maxQueuedNotifications, and counts the ones dropped.
type notificationGate struct {
	log *zap.Logger

	mu      sync.Mutex
	queued  int             // forwarded session/cancels not yet handled
	cancels map[string]bool // sessions with a session/cancel queued
	dropped map[string]uint64
}

func newNotificationGate(log *zap.Logger) *notificationGate {
	return &notificationGate{log: log, cancels: map[string]bool{}, dropped: map[string]uint64{}}
}

// admitCancel reports whether a session/cancel for the session may be
// forwarded: none is queued for it yet and the queue bound has room. A
// refused one collapses into the one queued (or, over the bound, is counted
// as dropped); its effect on the turns was already applied.
func (g *notificationGate) admitCancel(sessionID string) bool {
	g.mu.Lock()
	if g.cancels[sessionID] {
		g.mu.Unlock()
		return false
	}
	if g.queued >= maxQueuedNotifications {
		g.mu.Unlock()
		g.drop("notification queue bound reached", sdk.AgentMethodSessionCancel)
		return false
	}
	g.cancels[sessionID] = true
	g.queued++
	g.mu.Unlock()
	return true
}

// cancelHandled is called when the SDK delivered a session/cancel.
func (g *notificationGate) cancelHandled(sessionID string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cancels[sessionID] {
		delete(g.cancels, sessionID)
		g.queued--
	}
}

// drop counts one dropped notification and logs a warning at the first drop
// for a reason and then at every power of two, with the count so far.
func (g *notificationGate) drop(reason, method string) {
	g.mu.Lock()
	g.dropped[reason]++
	n := g.dropped[reason]
	g.mu.Unlock()
	if n&(n-1) == 0 {
		g.log.Warn("notifications dropped", zap.String("reason", reason),
			zap.String("lastMethod", logMethod(method)), zap.Uint64("count", n))
	}
}

// logMethod bounds a client-chosen method name for the log.
func logMethod(m string) string {
	const maxLen = 64
	if len(m) > maxLen {
		return m[:maxLen] + "…"
	}
	return m
}

// pendingCalls tracks every request the guard let through until a reply
// with its id was written: at end of input the daemon answers what it read
// before it exits, and a prompt's turn ends when its reply is out.
//
// Ids are compared as JSON values (a string by its decoded text, a number
// by its digits). A client reusing an id while the first request is pending
// gets its replies matched oldest first.
type pendingCalls struct {
	mu      sync.Mutex
	byID    map[string][]func(json.RawMessage) // per id, oldest first; an entry may be nil
	n       int
	idle    chan struct{} // closed while n == 0
	dead    chan struct{} // closed by abandon
	abandon func()
}

func newPendingCalls() *pendingCalls {
	c := &pendingCalls{byID: map[string][]func(json.RawMessage){}, idle: make(chan struct{}), dead: make(chan struct{})}
	close(c.idle)
	c.abandon = sync.OnceFunc(c.abandonAll)
	return c
}

// idKey is the identity of a JSON-RPC id, whatever its encoding.
func idKey(id json.RawMessage) string {
	id = bytes.TrimSpace(id)
	if len(id) > 0 && id[0] == '"' {
		var s string
		if json.Unmarshal(id, &s) == nil {
			return "s" + s
		}
	}
	return "n" + string(id)
}

// add records a request awaiting its reply; onReply, if set, runs once the
// reply was written, with the reply's result (nil for an error reply, or
// when abandon gave up on it).
func (c *pendingCalls) add(id json.RawMessage, onReply func(result json.RawMessage)) {
	if !c.track(idKey(id), onReply) && onReply != nil {
		onReply(nil)
	}
}

// track records a pending request; false once abandoned.
func (c *pendingCalls) track(k string, onReply func(json.RawMessage)) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.dead:
		return false
	default:
	}
	c.byID[k] = append(c.byID[k], onReply)
	if c.n == 0 {
		c.idle = make(chan struct{})
	}
	c.n++
	return true
}

// replied marks the oldest pending request with id as answered by a reply
// with result (nil for an error).
func (c *pendingCalls) replied(id, result json.RawMessage) {
	k := idKey(id)
	c.mu.Lock()
	q := c.byID[k]
	if len(q) == 0 {
		c.mu.Unlock()
		return
	}
	f := q[0]
	if len(q) == 1 {
		delete(c.byID, k)
	} else {
		c.byID[k] = q[1:]
	}
	c.n--
	if c.n == 0 {
		close(c.idle)
	}
	c.mu.Unlock()
	if f != nil {
		f(result)
	}
}

// wait blocks until no request awaits its reply, abandon was called, or
// ctx ends; it returns how many were still pending.
func (c *pendingCalls) wait(ctx context.Context) int {
	c.mu.Lock()
	idle := c.idle
	c.mu.Unlock()
	select {
	case <-idle:
	case <-c.dead:
	case <-ctx.Done():
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// abandonAll gives up on every pending reply (stdout is gone, or shutdown
// stopped waiting): their callbacks run now, and later requests are not
// tracked.
func (c *pendingCalls) abandonAll() {
	c.mu.Lock()
	close(c.dead)
	var fs []func(json.RawMessage)
	for _, q := range c.byID {
		for _, f := range q {
			if f != nil {
				fs = append(fs, f)
			}
		}
	}
	c.byID = map[string][]func(json.RawMessage){}
	c.mu.Unlock()
	for _, f := range fs {
		f(nil)
	}
}

var sdkNotificationPrefix = []byte(`{"jsonrpc":"2.0","method":`)

// replyWatcher is the writer the SDK and the guard reply through: each Write
// goes out, then a reply it carried marks its request answered — after the
// write, so whatever waits for the reply comes after it on the wire.
type replyWatcher struct {
	w     io.Writer
	calls *pendingCalls
}

func (r *replyWatcher) Write(p []byte) (int, error) {
	n, err := r.w.Write(p)
	if id, result, ok := replyID(p); ok {
		r.calls.replied(id, result)
	}
	return n, err
}

// replyID returns the id and result of the reply p carries, if p is one
// JSON-RPC response (an id, no method); result is nil for an error reply. The SDK and the guard write one message per
// Write; both write replies small enough to decode whole. A notification
// as the SDK marshals it (method right after jsonrpc) is skipped unread.
func replyID(p []byte) (id, result json.RawMessage, ok bool) {
	if bytes.HasPrefix(p, sdkNotificationPrefix) {
		return nil, nil, false
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(p, &m) != nil || m.Method != nil || m.ID == nil || string(m.ID) == "null" {
		return nil, nil, false
	}
	return m.ID, m.Result, true
}

// containDraw ends the session/load drawing goroutine after a panic: the
// panic is logged, recorded for reopen to answer -32603, and the rest of the
// queue is drained so the decoding side never blocks on it.
func (r *reopening) containDraw() {
	v := recover()
	if v == nil {
		return
	}
	r.server.log.Error("replay drawing panicked", zap.String("session", r.id), zap.Any("panic", v),
		zap.ByteString("stack", debug.Stack()))
	r.drawFailed = sdk.NewInternalError(map[string]any{"error": fmt.Sprintf("internal error while replaying session %s", r.id)})
	for range r.drawQ {
	}
}
