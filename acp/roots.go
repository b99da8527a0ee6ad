package acp

// additionalDirectories (ACP, stable since June 2026): a project of several
// folders sends its other roots on session/new, session/load and
// session/resume. Each is checked as the cwd is; the session's commands may
// write them at workspace levels (executor.Request.Roots: the sandbox binds
// each as it binds the cwd, with the same protected names inside), the
// model is told of them in the system prompt, and they are journaled (a
// state record) and restored on load when the client names none. The
// session's change tracker covers them too (changes.Tracker.SetRoots).

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"

	"go.uber.org/zap"
)

// stateRoots is the journal state key of the additional directories.
const stateRoots = "additionalDirectories"

// checkRoots checks each directory as the cwd is checked (absolute, an
// existing directory, on the host for a remote executor) and returns them
// cleaned, without duplicates or the cwd itself; -32602 names the first bad one.
func (s *Server) checkRoots(ctx context.Context, cwd string, dirs []string) ([]string, error) {
	var out []string
	for _, d := range dirs {
		if d == "" || !filepath.IsAbs(d) {
			return nil, invalidParams("additionalDirectories: %q is not an absolute path", d)
		}
		if err := s.checkSessionCwd(ctx, d); err != nil {
			return nil, invalidParams("additionalDirectories: %q: %v", d, err)
		}
		d = filepath.Clean(d)
		if d != filepath.Clean(cwd) && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out, nil
}

// setRoots gives the session its additional directories and journals
// them; nothing when dirs is empty.
func (s *Server) setRoots(ss *session, dirs []string) {
	if len(dirs) == 0 {
		return
	}
	ss.agent.SetAdditionalDirectories(s.runDirs(dirs))
	ss.trackRoots(dirs)
	if err := ss.journal.AppendState(stateRoots, dirs); err != nil {
		ss.log.Warn("journal: additional directories not recorded", zap.String("session", ss.id), zap.Error(err))
	}
}

// restoreRoots gives a reopened session the directories its journal
// recorded, those that still are directories.
func (s *Server) restoreRoots(ss *session, state map[string]json.RawMessage) {
	raw, ok := state[stateRoots]
	if !ok {
		return
	}
	var dirs []string
	if err := json.Unmarshal(raw, &dirs); err != nil {
		ss.log.Warn("journal: bad additional directories", zap.String("session", ss.id), zap.Error(err))
		return
	}
	var kept []string
	for _, d := range dirs {
		if filepath.IsAbs(d) && s.checkSessionCwd(context.Background(), d) == nil {
			kept = append(kept, filepath.Clean(d))
		}
	}
	ss.agent.SetAdditionalDirectories(s.runDirs(kept))
	ss.trackRoots(kept)
}

// trackRoots has the session's change tracker (if any: never for a
// remote executor) cover dirs too.
func (ss *session) trackRoots(dirs []string) {
	if ss.tracker != nil {
		ss.tracker.SetRoots(dirs)
	}
}

// runDirs are dirs where commands see them (runDir).
func (s *Server) runDirs(dirs []string) []string {
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		out = append(out, s.runDir(d))
	}
	return out
}
