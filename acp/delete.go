package acp

// session/delete (ACP, stable since June 2026; the Go SDK v0.13 has no
// type for it): Zed keeps a thread deletion only when the agent supports
// it, advertised as agentCapabilities.sessionCapabilities.delete = {}.

import (
	"context"
	"errors"
	"io/fs"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/replay"
)

// MethodSessionDelete is ACP's session/delete.
const MethodSessionDelete = "session/delete"

// DeleteSessionRequest is session/delete's params; its result is {}.
type DeleteSessionRequest struct {
	SessionID sdk.SessionId `json:"sessionId"`
}

// Validate implements the SDK's params check (decodeParams).
func (r *DeleteSessionRequest) Validate() error {
	if r.SessionID == "" {
		return errors.New("sessionId is required")
	}
	return nil
}

// DeleteSessionResponse is session/delete's result: {}.
type DeleteSessionResponse struct{}

// spillRemover is the executor's removal of a session's spill files
// (engine.Engine.RemoveSpills); an executor without spill files lacks it.
type spillRemover interface {
	RemoveSpills(owner string) error
}

// errNoSession is -32002 (ACP's resource not found) for an unknown session.
func errNoSession(id string) error {
	return &sdk.RequestError{Code: -32002, Message: "Resource not found: session " + id, Data: map[string]any{"sessionId": id}}
}

// DeleteSession removes a session for good: a session open in this daemon
// is closed first (as session/close), then its journal, its spill files
// and the change-store contents no other session uses
// (changes.Store.Forget) are removed. A session another daemon serves
// is refused (its journal is locked: nothing is removed); an unknown id is
// -32002. Spill removal is best effort once the journal is gone (the age
// sweep takes what is left); its failure is logged, not answered.
func (s *Server) DeleteSession(ctx context.Context, p DeleteSessionRequest) (resp DeleteSessionResponse, err error) {
	id := string(p.SessionID)
	if replay.ValidID(id) != nil {
		return resp, errNoSession(id)
	}
	s.closeIfOpen(id)
	if err := s.cfg.Store.Delete(id); err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return resp, errNoSession(id)
		case errors.Is(err, replay.ErrLocked):
			return resp, invalidParams("cannot delete session %s: another dsh-acp is serving it; close it there first", id)
		}
		return resp, invalidParams("cannot delete session %s: %v", id, err)
	}
	if sr, ok := s.cfg.Executor.(spillRemover); ok {
		if err := sr.RemoveSpills(id); err != nil {
			s.log.Warn("session/delete: spill files left", zap.String("session", id), zap.Error(err))
		}
	}
	if store := s.changeStore(); store != nil {
		if _, err := store.Forget(id); err != nil { // what it kept that no other session uses
			s.log.Warn("session/delete: change-store contents left to the age sweep", zap.String("session", id), zap.Error(err))
		}
	}
	s.log.Info("session/delete", zap.String("session", id))
	return resp, nil
}

// closeIfOpen closes session id when it is open in this daemon (what
// session/close does), so its journal lock is released.
func (s *Server) closeIfOpen(id string) {
	s.mu.Lock()
	_, open := s.sessions[id]
	s.mu.Unlock()
	if open {
		_, _ = s.CloseSession(context.Background(), sdk.CloseSessionRequest{SessionId: sdk.SessionId(id)})
	}
}
