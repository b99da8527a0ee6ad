package acp

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
	"sync/atomic"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/acp/ingress"
	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/llm"
)

// Some updates must follow a reply: Zed registers a thread only once the
// session/new reply arrived and drops the thread's updates before it
// (available_commands_update among them), and a session/load reply should
// be followed by the commands and the usage of the restored session. The
// SDK writes a reply only after its handler returned, so a handler cannot
// send them itself.
//
// replyHooks closes that gap. The wire-order observer, which sees every
// request before the SDK does, tells it which request ids to watch
// (expect); the SDK's writer is wrapped (writer), and right after the line
// that answers a watched id with a result has been written, the hook runs
// on the SDK's writing goroutine, before the SDK writes anything else. A
// hook gets the reply's result and must not write through the SDK (its
// write lock is held): it writes session updates through the server's own
// updateWriter. An error reply runs no hook.
type replyHooks struct {
	waiting atomic.Int32 // len(pending), read without the lock on every write
	mu      sync.Mutex
	pending map[string]func(result json.RawMessage)
}

func newReplyHooks() *replyHooks {
	return &replyHooks{pending: map[string]func(json.RawMessage){}}
}

// expect runs hook after the reply to the request with id (as on the wire).
func (h *replyHooks) expect(id json.RawMessage, hook func(result json.RawMessage)) {
	key, ok := idKey(id)
	if !ok {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, dup := h.pending[key]; !dup {
		h.waiting.Add(1)
	}
	h.pending[key] = hook
}

// writer wraps w, the writer the SDK is given.
func (h *replyHooks) writer(w io.Writer) io.Writer { return hookedWriter{w: w, h: h} }

type hookedWriter struct {
	w io.Writer
	h *replyHooks
}

// Write writes p (one whole message, as the SDK writes them), then runs the
// hook of the request it answers, if any.
func (hw hookedWriter) Write(p []byte) (int, error) {
	n, err := hw.w.Write(p)
	if err == nil && hw.h.waiting.Load() > 0 {
		hw.h.wrote(p)
	}
	return n, err
}

// wrote runs the hook p answers.
func (h *replyHooks) wrote(p []byte) {
	var reply struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(p, &reply) != nil || reply.Method != "" || reply.ID == nil {
		return // not a reply (the SDK's own requests and notifications)
	}
	key, ok := idKey(reply.ID)
	if !ok {
		return
	}
	h.mu.Lock()
	hook, found := h.pending[key]
	if found {
		delete(h.pending, key)
		h.waiting.Add(-1)
	}
	h.mu.Unlock()
	if found && reply.Result != nil {
		hook(reply.Result)
	}
}

// idKey is a request id in a form its echo in the reply shares (the SDK
// re-encodes the id it read: compact JSON).
func idKey(id json.RawMessage) (string, bool) {
	var b bytes.Buffer
	if len(id) == 0 || json.Compact(&b, id) != nil || b.String() == "null" {
		return "", false
	}
	return b.String(), true
}

// expectOpened watches the reply to a session/new, session/load or
// session/resume request m, to follow it with the session's updates.
func (s *Server) expectOpened(m ingress.Message) {
	if m.ID == nil {
		return
	}
	var p struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(m.Params, &p) // session/new names no session
	s.replies.expect(m.ID, func(result json.RawMessage) {
		id := p.SessionID
		if id == "" {
			var r struct {
				SessionID string `json:"sessionId"`
			}
			_ = json.Unmarshal(result, &r)
			id = r.SessionID
		}
		s.opened(id)
	})
}

// opened sends what follows the reply that opened session id: the slash
// commands, the full model list when the reply had a shorter one, and the
// usage of a restored session.
func (s *Server) opened(id string) {
	ss, err := s.session(sdk.SessionId(id))
	if err != nil {
		return
	}
	// Marked announced before the catalog's version is read: a list that
	// arrives from now on is sent by announceModels, one that arrived
	// before is sent here.
	ss.mu.Lock()
	ss.announced = true
	stale := false
	if ss.models != nil {
		_, version := ss.models.list()
		stale = ss.optionsVersion != version
	}
	ss.mu.Unlock()
	ss.send(availableCommands())
	if stale {
		ss.sendConfigOptions()
	}
	if u := ss.agent.Usage(); u.Used > 0 {
		ss.send(sdk.SessionUpdate{UsageUpdate: &sdk.SessionUsageUpdate{Used: u.Used, Size: u.Size, Cost: usageCost(u.Cost, u.Currency)}})
	}
}

// usageCost is usage_update's cost: only when a price is configured.
func usageCost(amount float64, currency string) *sdk.Cost {
	if currency == "" {
		return nil
	}
	return &sdk.Cost{Amount: amount, Currency: currency}
}

// hasModel reports whether m is a model client (not nil, nor a typed nil).
func hasModel(m agent.ModelClient) bool {
	if m == nil {
		return false
	}
	if c, ok := m.(*llm.Client); ok && c == nil {
		return false
	}
	return true
}
