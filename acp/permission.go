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
	"github.com/dsh-acp/dsh-acp/internal/permission"
	"github.com/dsh-acp/dsh-acp/presentation"
	"github.com/dsh-acp/dsh-acp/tools"
)

// Permission option ids offered in session/request_permission.
const (
	optAllowOnce    = "allow_once"
	optAllowSession = "allow_always"
	optAllowProject = "allow_always_project"
	optReject       = "reject"
)

// permissions is a session's permission state: its mode and the command
// prefixes the user chose to always allow. Safe for concurrent use.
type permissions struct {
	mu    sync.Mutex
	mode  permission.Mode
	allow []string
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

// approver is a session's agent.Approver: the permission policy, asking
// the user through session/request_permission when the policy says ask.
type approver struct {
	ss     *session
	client permissionClient
	// userRules is the user's rule file; the project's is in the cwd.
	userRules string
}

// permissionClient asks the client; *sdk.AgentSideConnection satisfies it.
type permissionClient interface {
	RequestPermission(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error)
}

// decisionRecord is what the journal keeps of each decision.
type decisionRecord struct {
	Call     string `json:"call"`
	Command  string `json:"command"`
	Decision string `json:"decision"` // allow, deny, ask
	Outcome  string `json:"outcome,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// Approve decides one model-issued call. Only bash is judged: bash_output
// and bash_kill act on the session's own tasks, which the tools fence.
func (a *approver) Approve(ctx context.Context, s tools.Session, call agent.ToolCall) agent.Approval {
	if call.Name != tools.BashName {
		return agent.Approval{Verdict: agent.Allow}
	}
	var args struct {
		Command string `json:"command"`
	}
	if json.Unmarshal(call.Args, &args) != nil || args.Command == "" {
		return agent.Approval{Verdict: agent.Allow} // the tool reports the bad arguments
	}
	rules, err := permission.LoadRules(a.userRules, permission.ProjectRulesPath(s.Cwd))
	if err != nil {
		a.ss.log.Warn("permission rules", zap.String("session", a.ss.id), zap.Error(err))
		return a.record(call, args.Command, "deny", "", agent.Approval{Verdict: agent.Deny,
			Reason: fmt.Sprintf("Not run: the permission rules cannot be read (%v). Fix the file or ask the user.", err)})
	}
	mode, allow := a.ss.perms.snapshot()
	v := permission.Decide(mode, rules, allow, args.Command)
	switch v.Decision {
	case permission.Allow:
		return a.record(call, args.Command, "allow", "", agent.Approval{Verdict: agent.Allow})
	case permission.Deny:
		return a.record(call, args.Command, "deny", "", agent.Approval{Verdict: agent.Deny,
			Reason: fmt.Sprintf("Not run: %s (permission mode %q). Do not retry it in another form; ask the user if it is needed.", v.Reason, mode)})
	}
	return a.ask(ctx, call, args.Command, v)
}

// ask shows the card as pending and asks the user.
func (a *approver) ask(ctx context.Context, call agent.ToolCall, command string, v permission.Verdict) agent.Approval {
	p := a.ss.present
	intent := p.box.PresentCall(call.Name, call.Args)
	pending := sdk.ToolCallStatusPending
	p.sendUpdate(sdk.SessionUpdate{ToolCallUpdate: &sdk.SessionToolCallUpdate{ToolCallId: sdk.ToolCallId(call.ID), Status: &pending}})

	resp, err := a.client.RequestPermission(ctx, sdk.RequestPermissionRequest{
		SessionId: sdk.SessionId(a.ss.id),
		ToolCall:  presentation.PermissionToolCall(call.ID, intent, p.caps),
		Options:   permissionOptions(v),
	})
	outcome := outcomeOf(resp, err, ctx)
	approval := a.apply(outcome, v)
	if approval.Verdict == agent.Allow {
		running := sdk.ToolCallStatusInProgress
		p.sendUpdate(sdk.SessionUpdate{ToolCallUpdate: &sdk.SessionToolCallUpdate{ToolCallId: sdk.ToolCallId(call.ID), Status: &running}})
	}
	if err != nil && ctx.Err() == nil {
		a.ss.log.Warn("request_permission failed", zap.String("session", a.ss.id), zap.String("call", call.ID), zap.Error(err))
	}
	return a.record(call, command, "ask", outcome, approval)
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
func (a *approver) apply(outcome string, v permission.Verdict) agent.Approval {
	switch outcome {
	case optAllowOnce:
		return agent.Approval{Verdict: agent.Allow}
	case optAllowSession, optAllowProject:
		if len(v.Prefixes) == 0 {
			return agent.Approval{Verdict: agent.Allow}
		}
		allow := a.ss.perms.remember(v.Prefixes[0])
		if err := a.ss.journal.AppendState(stateAllow, allow); err != nil {
			a.ss.log.Error("journal allow", zap.String("session", a.ss.id), zap.Error(err))
		}
		if outcome == optAllowProject {
			if err := permission.SaveProjectAllow(a.ss.cwd, v.Prefixes[0]); err != nil {
				a.ss.log.Warn("save project rule", zap.String("session", a.ss.id), zap.Error(err))
			}
		}
		return agent.Approval{Verdict: agent.Allow}
	case "cancelled":
		return agent.Approval{Verdict: agent.CancelTurn}
	case "error":
		return agent.Approval{Verdict: agent.Deny, Reason: "Not run: the permission request to the user failed."}
	}
	return agent.Approval{Verdict: agent.Deny, Reason: "The user declined to run this command. Do not retry it; ask the user how to proceed."}
}

// permissionOptions are Allow once, Always allow (for the session and, to
// save it, for the project) when a safe prefix exists, and Reject.
func permissionOptions(v permission.Verdict) []sdk.PermissionOption {
	opts := []sdk.PermissionOption{{OptionId: optAllowOnce, Name: "Allow once", Kind: sdk.PermissionOptionKindAllowOnce}}
	if len(v.Prefixes) > 0 {
		prefix := v.Prefixes[0]
		opts = append(opts,
			sdk.PermissionOption{OptionId: optAllowSession, Name: fmt.Sprintf("Always allow `%s` in this session", prefix), Kind: sdk.PermissionOptionKindAllowAlways},
			sdk.PermissionOption{OptionId: optAllowProject, Name: fmt.Sprintf("Always allow `%s` in this project", prefix), Kind: sdk.PermissionOptionKindAllowAlways})
	}
	return append(opts, sdk.PermissionOption{OptionId: optReject, Name: "Reject", Kind: sdk.PermissionOptionKindRejectOnce})
}

// record journals a decision and returns the approval unchanged.
func (a *approver) record(call agent.ToolCall, command, decision, outcome string, ap agent.Approval) agent.Approval {
	rec := decisionRecord{Call: call.ID, Command: command, Decision: decision, Outcome: outcome, Reason: ap.Reason}
	if err := a.ss.journal.AppendState("permission.decision."+call.ID, rec); err != nil {
		a.ss.log.Error("journal decision", zap.String("session", a.ss.id), zap.Error(err))
	}
	return ap
}
