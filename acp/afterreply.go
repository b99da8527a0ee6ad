package acp

import (
	"encoding/json"
	"io"
	"sync"
)

// afterReply sits between the SDK and the shared stdout writer and runs
// functions once the reply that opened a session — session/new,
// session/load or session/resume — has been written: Zed registers a new
// thread only when the session/new reply arrives and drops the updates
// sent before it. Anything that must reach the client as soon as a session
// exists (a failed MCP server's notice, the available commands) goes
// through After.
//
// The SDK writes one whole message per Write. A successful reply is
// matched to its session by the "sessionId" of its result (session/new)
// or by the request id that named the session (session/load and
// session/resume: Expect, called in wire order before the SDK dispatches
// the request).
type afterReply struct {
	w io.Writer

	mu       sync.Mutex
	requests map[string]string   // request id → the session it opens
	waiting  map[string][]func() // session id → functions to run after its reply
}

func newAfterReply(w io.Writer) *afterReply {
	return &afterReply{w: w, requests: map[string]string{}, waiting: map[string][]func(){}}
}

// Expect notes that the request with this id opens session sid.
func (a *afterReply) Expect(id json.RawMessage, sid string) {
	if len(id) == 0 || string(id) == "null" || sid == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.requests[idKey(id)] = sid
}

// After runs fn on a goroutine of its own once the successful reply
// opening session sid has been written, after the functions registered
// before it. Call it from the handler of the request, before it returns;
// Drop forgets the functions of a session that closes first.
func (a *afterReply) After(sid string, fn func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.waiting[sid] = append(a.waiting[sid], fn)
}

// Drop forgets what waits for session sid's reply.
func (a *afterReply) Drop(sid string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.waiting, sid)
}

// Write writes p, then runs what waited for the reply p is, if any.
func (a *afterReply) Write(p []byte) (int, error) {
	n, err := a.w.Write(p)
	if err == nil {
		if fns := a.replied(p); len(fns) > 0 {
			go func() {
				for _, fn := range fns {
					fn()
				}
			}()
		}
	}
	return n, err
}

// replied returns the functions waiting for the reply in line, removing
// them; nil when line is not a successful reply opening a session.
func (a *afterReply) replied(line []byte) []func() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.requests) == 0 && len(a.waiting) == 0 {
		return nil
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(line, &m) != nil || m.Method != "" || m.ID == nil {
		return nil
	}
	key := idKey(m.ID)
	sid, named := a.requests[key]
	delete(a.requests, key) // answered, successfully or not
	if len(m.Result) == 0 {
		return nil
	}
	if !named {
		var r struct {
			SessionID string `json:"sessionId"`
		}
		if json.Unmarshal(m.Result, &r) != nil || r.SessionID == "" {
			return nil
		}
		sid = r.SessionID
	}
	fns := a.waiting[sid]
	delete(a.waiting, sid)
	return fns
}
