package acp

import (
	"encoding/json"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/acp/ingress"
)

// Some updates must follow a reply: Zed registers a thread only once the
// session/new reply arrived and drops the thread's updates before it
// (available_commands_update among them), and a session/load reply should
// be followed by the commands and the usage of the restored session. The
// SDK writes a reply only after its handler returned, so a handler cannot
// send them itself. The wire-order observer registers a hook with the
// request in pendingCalls (rpc.go); the reply watcher runs it right after
// the reply's line was written, on the SDK's writing goroutine, before the
// SDK writes anything else. A hook writes through the server's own
// updateWriter, never through the SDK. An error reply runs no hook.

// afterOpened is the reply hook of a session/new, session/load or
// session/resume request m: it follows the reply with the session's
// updates.
func (s *Server) afterOpened(m ingress.Message) func(result json.RawMessage) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(m.Params, &p) // session/new names no session
	return func(result json.RawMessage) {
		if result == nil {
			return // an error reply, or none
		}
		id := p.SessionID
		if id == "" {
			var r struct {
				SessionID string `json:"sessionId"`
			}
			_ = json.Unmarshal(result, &r)
			id = r.SessionID
		}
		s.opened(id)
	}
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
	if ss.catalog != nil {
		_, version := ss.catalog.list()
		stale = ss.optionsVersion != version
	}
	waiting := ss.afterOpened
	ss.afterOpened = nil
	ss.mu.Unlock()
	ss.send(availableCommands())
	if len(waiting) > 0 {
		go func() { // they may wait (for MCP servers to connect): not on the writer
			for _, fn := range waiting {
				fn()
			}
		}()
	}
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

// afterOpen runs fn, on a goroutine of its own, once the reply that opened
// the session was written (after its slash commands), with whatever else
// was queued before it. Call it from the handler of the request that opens
// the session, before it returns.
func (ss *session) afterOpen(fn func()) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.afterOpened = append(ss.afterOpened, fn)
}
