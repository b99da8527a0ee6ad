package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/mcp"
	"github.com/dsh-acp/dsh-acp/internal/permission"
	"github.com/dsh-acp/dsh-acp/tools"
)

// DeclinedByUser is the line a card shows when the user rejected its call.
const DeclinedByUser = "declined by the user"

// Permission option ids offered in session/request_permission.
const (
	optAllowOnce    = "allow_once"
	optAllowSession = "allow_always"
	optAllowProject = "allow_always_project"
	optReject       = "reject"
	optTrustProject = "trust_project_rules"
)

// permissions is a session's permission state: its mode and the command
// prefixes the user chose to always allow. Safe for concurrent use.
type permissions struct {
	mu    sync.Mutex
	mode  permission.Mode
	allow []string
	tools []mcp.Rule // MCP tools always allowed in this session
}

func (p *permissions) currentMode() permission.Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

func (p *permissions) setMode(m permission.Mode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
}

func (p *permissions) snapshot() (permission.Mode, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode, slices.Clone(p.allow)
}

// remember adds prefix to the always-allowed list; it returns the new list.
func (p *permissions) remember(prefix string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !slices.Contains(p.allow, prefix) {
		p.allow = append(p.allow, prefix)
	}
	return slices.Clone(p.allow)
}

// restore applies the journaled state of a reopened session.
func (p *permissions) restore(state map[string]json.RawMessage) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if raw, ok := state[stateMode]; ok {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			if m, err := permission.ParseMode(s); err == nil {
				p.mode = m
			}
		}
	}
	if raw, ok := state[stateAllow]; ok {
		var allow []string
		if json.Unmarshal(raw, &allow) == nil {
			p.allow = allow
		}
	}
}

// approver is a session's agent.Approver: it asks the tool what a call
// needs, applies the permission policy to it, and asks the user through
// session/request_permission when the policy says ask.
type approver struct {
	ss     *session
	client permissionClient
	tools  needer
	// userRules is the user's rule file; the project's is in the cwd.
	userRules string
	// trust holds the project rule files the user approved; a project
	// file's allow rules apply only once its exact content is approved.
	trust *permission.TrustStore
}

// needer says what a call needs; *tools.Registry and the session's
// toolbox satisfy it.
type needer interface {
	Needs(name string, args json.RawMessage) (tools.Need, error)
}

// permissionClient asks the client; *sdk.AgentSideConnection satisfies it.
type permissionClient interface {
	RequestPermission(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error)
}

// Approve decides one model-issued call from what its tool says it needs:
// nothing (the session's own tasks) runs; a command line goes to the
// judge; anything else, and a tool that declares nothing, is asked about
// in ask mode, denied in read-only mode and run in auto mode.
func (a *approver) Approve(ctx context.Context, s tools.Session, call event.ToolCall) agent.Approval {
	need, err := a.tools.Needs(call.Name, call.Args)
	switch {
	case err != nil:
		return agent.Approval{Verdict: agent.Allow} // the tool rejects the arguments without acting
	case need.Kind == tools.NeedNothing:
		return agent.Approval{Verdict: agent.Allow}
	case need.Kind == tools.NeedCommand:
		if need.Subject == "" {
			return agent.Approval{Verdict: agent.Allow} // the tool reports the empty command
		}
		return a.judgeCommand(ctx, s, call, need)
	case need.Kind == tools.NeedTool:
		return a.judgeTool(call, need)
	}
	return a.judgeOther(ctx, call, need)
}

// judgeCommand applies the rule files, the mode and the session's
// always-allow prefixes to a command line. A project rule file the user has
// not approved contributes only its deny rules; when its allow rules would
// let the command run, the question offers to trust the file.
func (a *approver) judgeCommand(ctx context.Context, s tools.Session, call event.ToolCall, need tools.Need) agent.Approval {
	command := need.Subject
	loaded, err := permission.LoadTrustedRules(a.userRules, permission.ProjectRulesPath(s.Cwd), a.trust)
	if err != nil {
		a.ss.log.Warn("permission rules", zap.String("session", a.ss.id), zap.Error(err))
		return denied(command, fmt.Sprintf("Not run: the permission rules cannot be read (%v). Fix the file or ask the user.", err),
			"denied: the permission rules cannot be read")
	}
	mode, allow := a.ss.perms.snapshot()
	req := permission.Request{Mode: mode, Rules: loaded.Rules, SessionAllow: allow, Command: command,
		Background: need.Background, Stat: permission.StatIn(s.Cwd)}
	v := permission.Judge(req)
	switch v.Decision {
	case permission.Allow:
		return agent.Approval{Verdict: agent.Allow, Decision: event.Decision{Subject: command, Verdict: event.VerdictAllow},
			Level: callLevel(s, req)}
	case permission.Deny:
		return denied(command, fmt.Sprintf("Not run: %s (permission mode %q). Do not retry it in another form; ask the user if it is needed.", v.Reason, mode),
			v.Reason)
	}
	var project *permission.ProjectFile
	if loaded.NeedsApproval() {
		req.Rules = loaded.IfTrusted()
		if permission.Judge(req).Decision == permission.Allow {
			project = loaded.Project
		}
	}
	return a.ask(ctx, call, command, v.Prefixes, project)
}

// judgeOther decides a call that is not a command line by the mode alone.
func (a *approver) judgeOther(ctx context.Context, call event.ToolCall, need tools.Need) agent.Approval {
	mode, _ := a.ss.perms.snapshot()
	switch {
	case need.Kind == tools.NeedRead || mode == permission.ModeAuto:
		return agent.Approval{Verdict: agent.Allow, Decision: event.Decision{Subject: need.Subject, Verdict: event.VerdictAllow}}
	case mode == permission.ModeReadOnly:
		return denied(need.Subject, fmt.Sprintf("Not run: the %s tool may change things, and the session is in %q mode. Ask the user to switch modes if it is needed.", call.Name, mode),
			fmt.Sprintf("denied in %s mode: %s may change things", mode, call.Name))
	}
	return a.ask(ctx, call, need.Subject, nil, nil)
}

// denied is a refusal: reason is what the model reads, shown the short
// line on the card.
func denied(subject, reason, shown string) agent.Approval {
	return agent.Approval{Verdict: agent.Deny, Reason: reason, UserReason: shown,
		Decision: event.Decision{Subject: subject, Verdict: event.VerdictDeny}}
}

// ask defers to the user: the loop opens the card pending, then the
// returned Ask puts the question; prefixes are the command prefixes an
// always-allow answer may remember, and project, when set, an unapproved
// project rule file whose allow rules would run the call: the user may
// trust it.
func (a *approver) ask(_ context.Context, call event.ToolCall, subject string, prefixes []string, project *permission.ProjectFile) agent.Approval {
	return agent.Approval{Verdict: agent.Ask, Ask: func(ctx context.Context) agent.Approval {
		return a.question(ctx, call, subject, prefixes, project)
	}}
}

// question asks the user about the call whose card is open and pending,
// and marks it running again when allowed.
func (a *approver) question(ctx context.Context, call event.ToolCall, subject string, prefixes []string, project *permission.ProjectFile) agent.Approval {
	var trust *trustOffer
	if project != nil {
		trust = &trustOffer{
			name:    "Trust this project's rules and run: " + clipRunes(project.Summary, 300),
			approve: func() error { return a.trust.Approve(project.Path, project.Hash) },
		}
	}
	answer, outcome := a.put(ctx, call, permissionOptions(prefixes), trust)
	return a.answered(call, subject, answer, a.apply(outcome, prefixes))
}

// trustOffer is an extra first option of a question: trust a project file
// (its content as shown: approve records the hash the user saw).
type trustOffer struct {
	name    string
	approve func() error
}

// put sends the question about call with options (and trust's option
// first, when set) and returns the user's answer and the outcome to apply:
// trusting the project counts as allowing once.
func (a *approver) put(ctx context.Context, call event.ToolCall, options []sdk.PermissionOption, trust *trustOffer) (answer, outcome string) {
	if trust != nil {
		options = append([]sdk.PermissionOption{{OptionId: optTrustProject, Kind: sdk.PermissionOptionKindAllowAlways,
			Name: trust.name}}, options...)
	}
	resp, err := a.client.RequestPermission(ctx, sdk.RequestPermissionRequest{
		SessionId: sdk.SessionId(a.ss.id),
		ToolCall:  a.ss.present.Asking(call.ID),
		Options:   options,
	})
	if err != nil && ctx.Err() == nil {
		a.ss.log.Warn("request_permission failed", zap.String("session", a.ss.id), zap.String("call", call.ID), zap.Error(err))
	}
	answer = outcomeOf(resp, err, ctx)
	outcome = answer
	if answer == optTrustProject && trust != nil {
		if err := trust.approve(); err != nil {
			a.ss.log.Warn("trust project file", zap.String("session", a.ss.id), zap.Error(err))
		}
		outcome = optAllowOnce
	}
	return answer, outcome
}

// answered marks an allowed call running again and records the question
// as the approval's decision.
func (a *approver) answered(call event.ToolCall, subject, answer string, approval agent.Approval) agent.Approval {
	if approval.Verdict == agent.Allow {
		a.ss.present.Allowed(call.ID)
	}
	approval.Decision = event.Decision{Subject: subject, Verdict: event.VerdictAsk, Outcome: answer}
	return approval
}

// outcomeOf names the user's answer: an option id, or "cancelled".
func outcomeOf(resp sdk.RequestPermissionResponse, err error, ctx context.Context) string {
	switch {
	case ctx.Err() != nil:
		return "cancelled"
	case err != nil:
		return "error"
	case resp.Outcome.Selected != nil:
		return string(resp.Outcome.Selected.OptionId)
	}
	return "cancelled"
}

// apply turns the user's answer into an approval, remembering always-allow.
func (a *approver) apply(outcome string, prefixes []string) agent.Approval {
	var remember func(project bool)
	if len(prefixes) > 0 {
		remember = func(project bool) {
			allow := a.ss.perms.remember(prefixes[0])
			if err := a.ss.journal.AppendState(stateAllow, allow); err != nil {
				a.ss.log.Error("journal allow", zap.String("session", a.ss.id), zap.Error(err))
			}
			if project {
				if err := a.trust.SaveProjectAllow(a.ss.cwd, prefixes[0]); err != nil {
					a.ss.log.Warn("save project rule", zap.String("session", a.ss.id), zap.Error(err))
				}
			}
		}
	}
	return answered(outcome, remember, "The user declined to run this command. Do not retry it; ask the user how to proceed.")
}

// answered turns the user's answer to a permission question into an
// approval: an always-allow (for the session, or for the project too) runs
// remember, if any, before allowing; declined is what the model reads when
// the user rejected the call.
func answered(outcome string, remember func(project bool), declined string) agent.Approval {
	switch outcome {
	case optAllowOnce:
		return agent.Approval{Verdict: agent.Allow}
	case optAllowSession, optAllowProject:
		if remember != nil {
			remember(outcome == optAllowProject)
		}
		return agent.Approval{Verdict: agent.Allow}
	case "cancelled":
		return agent.Approval{Verdict: agent.CancelTurn}
	case "error":
		return agent.Approval{Verdict: agent.Deny, Reason: "Not run: the permission request to the user failed.",
			UserReason: "not run: the permission question failed"}
	}
	return agent.Approval{Verdict: agent.Deny, Reason: declined, UserReason: DeclinedByUser}
}

// permissionOptions are Allow once, Always allow (for the session and, to
// save it, for the project) when a safe prefix exists, and Reject.
func permissionOptions(prefixes []string) []sdk.PermissionOption {
	opts := []sdk.PermissionOption{{OptionId: optAllowOnce, Name: "Allow once", Kind: sdk.PermissionOptionKindAllowOnce}}
	if len(prefixes) > 0 {
		prefix := prefixes[0]
		opts = append(opts,
			sdk.PermissionOption{OptionId: optAllowSession, Name: fmt.Sprintf("Always allow `%s` in this session", prefix), Kind: sdk.PermissionOptionKindAllowAlways},
			sdk.PermissionOption{OptionId: optAllowProject, Name: fmt.Sprintf("Always allow `%s` in this project", prefix), Kind: sdk.PermissionOptionKindAllowAlways})
	}
	return append(opts, sdk.PermissionOption{OptionId: optReject, Name: "Reject", Kind: sdk.PermissionOptionKindRejectOnce})
}

// clipRunes shortens s to at most n runes, with "…" when cut.
func clipRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
