package acp

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
)

// remoteCheckTimeout bounds the check of a session's directory on the
// host commands run on.
const remoteCheckTimeout = 15 * time.Second

// remote is the executor when it runs commands on another machine.
func (s *Server) remote() (executor.Remote, bool) {
	r, ok := s.cfg.Executor.(executor.Remote)
	return r, ok
}

// runDir is the directory a session's commands run in: its cwd, or, for
// an executor on another machine, the directory the cwd maps to there. The
// agent (and so the model, the tools and the prompt) and the cards use it;
// the journal and the project's own files keep the client's cwd.
func (s *Server) runDir(cwd string) string {
	if r, ok := s.remote(); ok && cwd != "" {
		return r.SessionDir(cwd)
	}
	return cwd
}

// location names a card's directory with the host commands run on (nil
// for a local executor).
func (s *Server) location() func(string) string {
	if r, ok := s.remote(); ok {
		return r.Location
	}
	return nil
}

// checkSessionCwd enforces an absolute, existing directory: on this
// machine for a local executor, on the host (the mapped directory) for a
// remote one. A host that cannot be asked (unreachable, its key refused)
// does not fail the session: the reason is logged and the first command
// shows it to the user.
func (s *Server) checkSessionCwd(ctx context.Context, cwd string) error {
	r, ok := s.remote()
	if !ok {
		return checkCwd(cwd)
	}
	if cwd == "" || !filepath.IsAbs(cwd) {
		return invalidParams("cwd must be an absolute path, got %q", cwd)
	}
	ctx, cancel := context.WithTimeout(ctx, remoteCheckTimeout)
	defer cancel()
	dir := r.SessionDir(filepath.Clean(cwd))
	err := r.CheckDir(ctx, dir)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, executor.ErrWorkdir):
		return invalidParams("cwd %q: %v", cwd, err)
	}
	s.log.Warn("session directory not checked on the host", zap.String("dir", dir), zap.Error(err))
	return nil
}
