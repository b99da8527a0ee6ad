package acp

// What the connection hands the server: the fast step in wire order
// (Preempt) and the handlers that run on goroutines of their own (handle).

import (
	"context"
	"encoding/json"
	"io"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/internal/rpc"
	"github.com/dsh-acp/dsh-acp/internal/turns"
)

// hooks are seams for the package's own tests; Serve installs none, and
// nothing on the wire can set them.
type hooks struct {
	// beforeDraw runs on the session/load drawing goroutine before each
	// event is drawn.
	beforeDraw func()
	// input wraps what the connection reads.
	input func(io.Reader) io.Reader
}

// Preempt takes each message in wire order, before the next line is read:
// initialize is answered here (so a session/new behind it sees the
// client's capabilities), a session/cancel cancels the turns of the prompts
// before it, a session/prompt opens its turn, a session/close cancels its
// session's turns (so does a session/delete). Everything else runs on its own goroutine (handle).
func (s *Server) Preempt(r *rpc.Request) bool {
	switch r.Method {
	case sdk.AgentMethodInitialize:
	case sdk.AgentMethodSessionNew:
		s.runStarted() // the rest begins after its reply (see begin)
	default:
		s.begin()
	}
	switch r.Method {
	case sdk.AgentMethodInitialize:
		if !r.IsNotification() {
			s.initialize(r)
		}
		return true
	case sdk.AgentMethodSessionCancel:
		var p sdk.CancelNotification
		if decodeParams(r.Params, &p) != nil {
			s.conn.Drop("invalid session/cancel", r.Method)
		} else {
			s.turns.CancelSession(string(p.SessionId))
		}
		r.Reply(nil, nil) // sent as a request: answered, as the SDK did
		return true
	case sdk.AgentMethodSessionPrompt:
		if !r.IsNotification() {
			s.openPrompt(r)
		}
		return r.IsNotification()
	case sdk.AgentMethodSessionClose, MethodSessionDelete:
		var p struct {
			SessionID string `json:"sessionId"`
		}
		if json.Unmarshal(r.Params, &p) == nil && p.SessionID != "" {
			s.turns.CancelSession(p.SessionID)
		}
	}
	return false
}

// promptCall is a prompt as the Preempter leaves it: decoded, with its
// turn; err when its params were refused.
type promptCall struct {
	p    sdk.PromptRequest
	turn *turns.Turn
	err  error
}

// openPrompt decodes a prompt (its one decode) and opens its turn.
func (s *Server) openPrompt(r *rpc.Request) { r.State = s.promptCall(r.Params) }

func (s *Server) promptCall(params json.RawMessage) *promptCall {
	pc := &promptCall{}
	if pc.err = decodeParams(params, &pc.p); pc.err == nil {
		pc.turn = s.turns.Open(string(pc.p.SessionId))
	}
	return pc
}

// method is one request's handler, with its params decoded.
type method func(s *Server, ctx context.Context, params json.RawMessage) (any, error)

// typed adapts a handler of a typed request: params are decoded and
// validated first (-32602 when they do not fit).
func typed[P any, R any](f func(s *Server, ctx context.Context, p P) (R, error)) method {
	return func(s *Server, ctx context.Context, params json.RawMessage) (any, error) {
		var p P
		if err := decodeParams(params, &p); err != nil {
			return nil, err
		}
		return f(s, ctx, p)
	}
}

// methods are the requests the server answers on their own goroutines
// (session/prompt is handled apart: its turn was opened in wire order).
var methods = map[string]method{
	sdk.AgentMethodAuthenticate:           typed((*Server).Authenticate),
	sdk.AgentMethodSessionNew:             typed((*Server).NewSession),
	sdk.AgentMethodSessionLoad:            typed((*Server).LoadSession),
	sdk.AgentMethodSessionResume:          typed((*Server).ResumeSession),
	sdk.AgentMethodSessionList:            typed((*Server).ListSessions),
	sdk.AgentMethodSessionClose:           typed((*Server).CloseSession),
	MethodSessionDelete:                   typed((*Server).DeleteSession),
	sdk.AgentMethodSessionSetMode:         typed((*Server).SetSessionMode),
	sdk.AgentMethodSessionSetConfigOption: typed((*Server).SetSessionConfigOption),
	sdk.AgentMethodSessionSetModel:        typed((*Server).UnstableSetSessionModel),
	sdk.AgentMethodLogout:                 typed((*Server).UnstableLogout),
}

// handle runs a request the Preempter left, and answers it.
func (s *Server) handle(r *rpc.Request) {
	if pc, ok := r.State.(*promptCall); ok {
		s.prompt(r, pc)
		return
	}
	m, ok := methods[r.Method]
	if !ok {
		r.Reply(nil, rpc.MethodNotFound(r.Method))
		return
	}
	result, err := m(s, r.Context(), r.Params)
	o, isOpen := result.(opened)
	if isOpen {
		result = o.result
	}
	if r.Reply(result, err) && err == nil && isOpen {
		s.opened(o.id) // what must follow the reply
	}
}

// opened is the result of a request that opened session id (session/new,
// session/load, session/resume): some updates must follow its reply — Zed
// registers a thread only once the session/new reply arrived and drops the
// thread's updates before it (see Server.opened).
type opened struct {
	id     string
	result any
}

// decodeParams decodes params into p and validates them as the SDK does;
// -32602 when they do not fit.
func decodeParams(params json.RawMessage, p any) error {
	if err := json.Unmarshal(params, p); err != nil {
		return sdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	if v, ok := p.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return sdk.NewInvalidParams(map[string]any{"error": err.Error()})
		}
	}
	return nil
}

// clientConn is the client's side of the connection for the questions the
// daemon puts (permissionClient).
type clientConn struct{ c *rpc.Conn }

// RequestPermission asks the client session/request_permission.
func (c clientConn) RequestPermission(ctx context.Context, p sdk.RequestPermissionRequest) (resp sdk.RequestPermissionResponse, err error) {
	err = c.c.Call(ctx, sdk.ClientMethodSessionRequestPermission, p, &resp)
	return resp, err
}
