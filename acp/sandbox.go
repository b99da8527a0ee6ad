package acp

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/sandboxlevel"
	"github.com/dsh-acp/dsh-acp/presentation"
)

// A session's sandbox level is what its commands run at (the permission
// step may narrow one call to read-only). It starts at Config.Sandbox,
// else the executor's default (internal/sandboxlevel's Offer); the
// `sandbox` config option and /sandbox change it. A level chosen
// explicitly is journaled and restored on session/load. A session that
// starts at the executor's default level off because confined levels
// cannot be built is told so, once.

// sandboxSetting is the sandbox setting's config option.
func sandboxSetting(ss *session) (sdk.SessionConfigOption, bool) {
	return sandboxlevel.Option(ss.agent.Sandbox(), ss.sandboxes.Levels()), true
}

// startSandbox sets a new or reopened session's level: the journaled one
// when state has it, else the daemon's start level (journaled when it was
// explicit and the session is new). A session left at an implicit off
// because no sandbox can be built is told why in its first turn.
func (ss *session) startSandbox(state map[string]json.RawMessage, isNew bool) {
	level, explicit := ss.sandboxes.Start(), ss.sandboxes.Explicit()
	if raw, ok := state[sandboxlevel.StateKey]; ok {
		var s string
		err := json.Unmarshal(raw, &s)
		l := executor.Level(s)
		if err == nil {
			l, err = executor.ParseLevel(s)
		}
		if err != nil {
			ss.log.Warn("journal sandbox level unreadable", zap.String("session", ss.id), zap.Error(err))
		} else {
			level, explicit = l, true
		}
	}
	ss.agent.SetSandbox(level)
	if isNew && explicit {
		if err := ss.journal.AppendState(sandboxlevel.StateKey, level); err != nil {
			ss.log.Error("journal sandbox level", zap.String("session", ss.id), zap.Error(err))
		}
	}
	if ss.sandboxes.Ready() {
		ss.tellUnsandboxed(level, explicit, ss.afterOpen)
		close(ss.settled)
		return
	}
	levels := ss.sandboxes.Levels()
	ss.afterOpen(func() { go ss.settleSandbox(level, levels, explicit) })
}

// settleSandbox runs, after the reply that opened the session, for a
// session that started on the executor's guess: it starts the executor's
// build (so the first reply never competes with it) and, once it is
// ready, an implicit level becomes its default (unless the user chose one
// meanwhile), the client gets the config options again when they differ
// from the guess, and the user is told when no sandbox can be built. The
// session's first turn waits for it (waitSettled).
func (ss *session) settleSandbox(guess executor.Level, guessed []executor.Level, explicit bool) {
	defer close(ss.settled)
	ss.sandboxes.WaitReady()
	explicit = explicit || ss.sandboxChosen.Load()
	level := ss.agent.Sandbox()
	if !explicit {
		level = ss.sandboxes.Start()
		ss.agent.SetSandbox(level)
	}
	if level != guess || !slices.Equal(guessed, ss.sandboxes.Levels()) {
		ss.sendConfigOptions()
	}
	ss.tellUnsandboxed(level, explicit, func(f func()) { f() })
}

// waitSettled waits until the session's level is settled (or ctx ends).
func (ss *session) waitSettled(ctx context.Context) {
	select {
	case <-ss.settled:
	case <-ctx.Done():
	}
}

// tellUnsandboxed tells why a session left at an implicit off runs without
// a sandbox: a notice (sent through send: afterOpen from the handler that
// opens the session, at once after it) for a client that takes notices,
// else a message queued for the first turn.
func (ss *session) tellUnsandboxed(level executor.Level, explicit bool, send func(func())) {
	why := ss.sandboxes.Unavailable()
	if why == nil || explicit || level != executor.LevelOff {
		return
	}
	if !ss.present.TakesNotices() {
		ss.agent.QueueInfo(sandboxlevel.Unsandboxed(why))
		return
	}
	n := presentation.NewNotice(presentation.SeverityWarning, "Commands run without a sandbox", strings.TrimSpace(sandboxlevel.Unsandboxed(why)))
	send(func() { ss.present.Notice(n) })
}

// setSandbox validates and applies a level. A level the executor cannot
// build is refused (the session keeps its level), except the current one,
// which is kept as it is.
func setSandbox(ss *session, value string) (string, error) {
	level, err := executor.ParseLevel(strings.TrimSpace(value))
	if err != nil {
		return "", invalidParams("%v", err)
	}
	if offered := ss.sandboxes.Levels(); level != ss.agent.Sandbox() && !slices.Contains(offered, level) {
		return "", invalidParams("%s", sandboxlevel.Refused(level, ss.sandboxes.Unavailable(), offered))
	}
	ss.agent.SetSandbox(level)
	ss.sandboxChosen.Store(true)
	return string(level), nil
}

// sandboxText is /sandbox's answer without an argument.
func (ss *session) sandboxText() string {
	return sandboxlevel.Text(ss.agent.Sandbox(), ss.sandboxes.Levels(), ss.sandboxes.Unavailable())
}
