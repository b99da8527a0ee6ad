package acp

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/permission"
	"github.com/dsh-acp/dsh-acp/tools"
)

// A session's sandbox level is what its commands run at (the permission
// step may narrow one call to read-only, see callLevel). It starts at
// Config.Sandbox, else the executor's default; the `sandbox` config option
// and /sandbox change it. A level chosen explicitly — by the flag, the
// environment, the option or the command — is journaled and restored on
// session/load, and never silently loosened: where it cannot be built the
// executor refuses every command. A session that starts at the executor's
// default level off because confined levels cannot be built is told so,
// once, in its first turn.

// sandboxConfigID is the config option that chooses the sandbox level.
const sandboxConfigID = "sandbox"

// stateSandbox is the journal state key of an explicitly chosen level.
const stateSandbox = "sandbox.level"

var sandboxInfo = map[executor.Level]struct{ name, description string }{
	executor.LevelReadOnly:         {"Read-only", "Commands write only throwaway space (/tmp, ~/.cache); no network"},
	executor.LevelWorkspace:        {"Workspace", "Commands may write the session's directory and throwaway space; no network"},
	executor.LevelWorkspaceNetwork: {"Workspace + network", "As Workspace, with the network"},
	executor.LevelOff:              {"Off", "No sandbox: commands run with your own access to files and the network"},
}

// sandboxes is the daemon's side of the levels: what the executor can
// build and the level sessions start at.
type sandboxes struct {
	confiner executor.Confiner     // nil: the executor does not confine
	start    func() executor.Level // a new session's level (asked once, on first use: it may wait for the sandbox probe)
	explicit bool                  // start was asked for (Config.Sandbox)
}

// errNotConfining is why confined levels are unavailable with an executor
// that is not an executor.Confiner.
var errNotConfining = fmt.Errorf("%w: this executor does not confine commands", executor.ErrSandbox)

// newSandboxes reads ex's levels; explicit is Config.Sandbox.
func newSandboxes(ex executor.Executor, explicit executor.Level) sandboxes {
	c, _ := ex.(executor.Confiner)
	sb := sandboxes{confiner: c, explicit: explicit != ""}
	sb.start = sync.OnceValue(func() executor.Level {
		switch {
		case explicit != "":
			return explicit
		case c != nil:
			return c.DefaultLevel()
		}
		return executor.LevelOff
	})
	return sb
}

// levels are the levels offered now, in executor.AllLevels order.
func (sb sandboxes) levels() []executor.Level {
	if sb.confiner == nil {
		return []executor.Level{executor.LevelOff}
	}
	offered := sb.confiner.Levels()
	return slices.DeleteFunc(executor.AllLevels(), func(l executor.Level) bool { return !slices.Contains(offered, l) })
}

// unavailable says why confined levels cannot be built, or nil.
func (sb sandboxes) unavailable() error {
	if sb.confiner == nil {
		return errNotConfining
	}
	return sb.confiner.Unavailable()
}

// sandboxOption is the sandbox config option: the levels offered, and
// current even when it is not (an explicit level that cannot be built).
func sandboxOption(current executor.Level, offered []executor.Level) sdk.SessionConfigOption {
	var opts sdk.SessionConfigSelectOptionsUngrouped
	for _, l := range executor.AllLevels() {
		if l != current && !slices.Contains(offered, l) {
			continue
		}
		info := sandboxInfo[l]
		opts = append(opts, sdk.SessionConfigSelectOption{
			Value: sdk.SessionConfigValueId(l), Name: info.name, Description: sdk.Ptr(info.description),
		})
	}
	o := sdk.NewSessionConfigOptionSelect(sdk.SessionConfigValueId(current), sdk.SessionConfigSelectOptions{Ungrouped: &opts})
	o.Select.Id = sandboxConfigID
	o.Select.Name = "Sandbox"
	o.Select.Description = sdk.Ptr("What commands can write and whether they reach the network")
	return o
}

// startSandbox sets a new or reopened session's level: the journaled one
// when state has it, else the daemon's start level (journaled when it was
// explicit and the session is new). A session left at an implicit off
// because no sandbox can be built is told why in its first turn.
func (ss *session) startSandbox(state map[string]json.RawMessage, isNew bool) {
	level, explicit := ss.sandboxes.start(), ss.sandboxes.explicit
	if raw, ok := state[stateSandbox]; ok {
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
		if err := ss.journal.AppendState(stateSandbox, level); err != nil {
			ss.log.Error("journal sandbox level", zap.String("session", ss.id), zap.Error(err))
		}
	}
	if why := ss.sandboxes.unavailable(); why != nil && !explicit && level == executor.LevelOff {
		ss.agent.QueueInfo(unsandboxedText(why))
	}
}

// unsandboxedText tells the user commands run without a sandbox, and why;
// installing bubblewrap is suggested only when it is what is missing.
func unsandboxedText(why error) string {
	reason := sandboxReason(why)
	fix := "See docs/security.md for what confining them needs."
	if strings.Contains(reason, "not found") {
		fix = "Install what is missing (Debian/Ubuntu: apt install bubblewrap util-linux) and restart the agent to confine them; see docs/security.md."
	}
	return fmt.Sprintf("Commands in this session run without a sandbox, with your own access to files and the network: %s. %s\n\n", reason, fix)
}

// sandboxReason is why's text without the ErrSandbox prefix.
func sandboxReason(why error) string {
	msg := why.Error()
	if p := executor.ErrSandbox.Error() + ": "; errors.Is(why, executor.ErrSandbox) {
		if i := strings.LastIndex(msg, p); i >= 0 {
			msg = msg[i+len(p):]
		}
	}
	return msg
}

// setSandbox validates, records and announces a level change. A level the
// executor cannot build is refused (the session keeps its level), except
// the current one, which is kept as it is.
func (ss *session) setSandbox(value string) error {
	level, err := executor.ParseLevel(strings.TrimSpace(value))
	if err != nil {
		return invalidParams("%v", err)
	}
	if level != ss.agent.Sandbox() && !slices.Contains(ss.sandboxes.levels(), level) {
		why := ss.sandboxes.unavailable()
		if why == nil {
			why = fmt.Errorf("%w: level %s is not offered here", executor.ErrSandbox, level)
		}
		return invalidParams("sandbox level %s cannot be built here: %s (offered: %s)", level, sandboxReason(why), levelList(ss.sandboxes.levels()))
	}
	ss.agent.SetSandbox(level)
	if err := ss.journal.AppendState(stateSandbox, level); err != nil {
		ss.log.Error("journal sandbox level", zap.String("session", ss.id), zap.Error(err))
	}
	ss.sendConfigOptions()
	ss.log.Info("sandbox", zap.String("session", ss.id), zap.String("level", string(level)))
	return nil
}

func levelList(ls []executor.Level) string {
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = string(l)
	}
	return strings.Join(s, ", ")
}

// sandboxText is /sandbox's answer without an argument.
func (ss *session) sandboxText() string {
	current := ss.agent.Sandbox()
	offered := ss.sandboxes.levels()
	var b strings.Builder
	fmt.Fprintf(&b, "Sandbox: %s — %s. Switch with /sandbox LEVEL:\n", current, sandboxInfo[current].description)
	for _, l := range executor.AllLevels() {
		if l != current && !slices.Contains(offered, l) {
			continue
		}
		mark := " "
		if l == current {
			mark = "*"
		}
		fmt.Fprintf(&b, "%s %s — %s\n", mark, l, sandboxInfo[l].description)
	}
	if why := ss.sandboxes.unavailable(); why != nil {
		fmt.Fprintf(&b, "\nConfined levels cannot be built here: %s.", sandboxReason(why))
		if current.Confined() {
			b.WriteString(" Commands are refused until you choose off or bubblewrap works.")
		}
		b.WriteString("\n")
	} else if current.Confined() {
		b.WriteString("\nIn ask mode, commands that run unasked because they look read-only run at read-only; in read-only mode, every command does.\n")
	}
	return b.String() + "\n"
}

// callLevel is the level a command the judge allowed runs at: in
// read-only mode, and in ask mode for a command allowed because it looks
// read-only (not by an allow rule), LevelReadOnly — so a command the
// parser misjudged can neither write nor send. Otherwise, and whenever the
// session's level is off (the user chose no sandbox, or none can be
// built), empty: the session's level.
func callLevel(s tools.Session, req permission.Request) executor.Level {
	if !s.Level.Confined() {
		return ""
	}
	switch req.Mode {
	case permission.ModeReadOnly:
		return executor.LevelReadOnly
	case permission.ModeAsk:
		bare := req
		bare.Rules = permission.Rules{Deny: req.Rules.Deny}
		bare.SessionAllow = nil
		if permission.Judge(bare).Decision == permission.Allow {
			return executor.LevelReadOnly
		}
	}
	return ""
}
