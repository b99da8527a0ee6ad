package approval

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/permission"
	"github.com/dsh-acp/dsh-acp/tools"
)

// judgeCommand applies the rule files, the mode and the session's
// always-allow prefixes to a command line. A project rule file the user has
// not approved contributes only its deny rules; when its allow rules would
// let the command run, the question offers to trust the file.
func (p *Policy) judgeCommand(s tools.Session, call event.ToolCall, need tools.Need) agent.Approval {
	command := need.Subject
	loaded, err := permission.LoadTrustedRules(p.cfg.UserRules, permission.ProjectRulesPath(s.Cwd), p.cfg.Trust)
	if err != nil {
		p.cfg.Log.Warn("permission rules", zap.String("session", p.cfg.Session), zap.Error(err))
		return denied(command, fmt.Sprintf("Not run: the permission rules cannot be read (%v). Fix the file or ask the user.", err),
			"denied: the permission rules cannot be read")
	}
	mode, prefixes, _ := p.snapshot()
	req := permission.Request{Mode: mode, Rules: loaded.Rules, SessionAllow: prefixes, Command: command,
		Background: need.Background, Stat: permission.StatIn(s.Cwd)}
	v := permission.Judge(req)
	switch v.Decision {
	case permission.Allow:
		a := allowed(command)
		a.Level = CallLevel(s, req)
		return a
	case permission.Deny:
		return denied(command, fmt.Sprintf("Not run: %s (permission mode %q). Do not retry it in another form; ask the user if it is needed.", v.Reason, mode),
			v.Reason)
	}
	q := question{call: call, subject: command, options: commandOptions(v.Prefixes),
		declined: "The user declined to run this command. Do not retry it; ask the user how to proceed."}
	if len(v.Prefixes) > 0 {
		prefix := v.Prefixes[0]
		q.remember = remember(p, &p.prefixes, prefix)
	}
	if loaded.NeedsApproval() {
		req.Rules = loaded.IfTrusted()
		if project := loaded.Project; permission.Judge(req).Decision == permission.Allow {
			q.trust = &trustOffer{
				name:    "Trust this project's rules and run: " + clipRunes(project.Summary, 300),
				approve: func() error { return p.cfg.Trust.Approve(project.Path, project.Hash) },
			}
		}
	}
	a := p.ask(q)
	if v.CreatesRepository {
		a = mayCreateRepository(a)
	}
	return a
}

// mayCreateRepository marks an approval about a command that creates a git
// repository (permission.Verdict.CreatesRepository) so that, once the user
// allows it, the sandbox lets the repository be made.
func mayCreateRepository(a agent.Approval) agent.Approval {
	ask := a.Ask
	a.Ask = func(ctx context.Context) agent.Approval {
		answer := ask(ctx)
		answer.NewRepository = answer.Verdict == agent.Allow
		return answer
	}
	return a
}

// commandOptions are Allow once, Always allow in this session when a safe
// prefix exists (its name says how to allow it for the project), and
// Reject: one option of each kind.
func commandOptions(prefixes []string) []Option {
	opts := []Option{{ID: AllowOnce, Name: "Allow once", Kind: KindAllowOnce}}
	if len(prefixes) > 0 {
		prefix := prefixes[0]
		opts = append(opts, Option{ID: AllowSession, Kind: KindAllowAlways,
			Name: fmt.Sprintf("Always allow `%s` in this session (for the project: /allow-project %s)", prefix, prefix)})
	}
	return append(opts, Option{ID: Reject, Name: "Reject", Kind: KindRejectOnce})
}

// CallLevel is the level a command the judge allowed runs at: in
// read-only mode, and in ask mode for a command allowed because it looks
// read-only (not by an allow rule), LevelReadOnly — so a command the
// parser misjudged can neither write nor send. Otherwise, and whenever the
// session's level is off (the user chose no sandbox, or none can be
// built), empty: the session's level.
func CallLevel(s tools.Session, req permission.Request) executor.Level {
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
