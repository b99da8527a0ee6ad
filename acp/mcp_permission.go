package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/mcp"
	"github.com/dsh-acp/dsh-acp/internal/permission"
	"github.com/dsh-acp/dsh-acp/tools"
)

// stateToolAllow is the journal state key of the MCP allowances chosen in
// a session (always allow, for the session).
const stateToolAllow = "permission.mcp"

// judgeTool decides a call of an MCP server's tool: auto mode runs it;
// otherwise it runs unasked only when an allowance covers it — the tool
// itself, or, for a tool its server marks read-only, that server's
// read-only tools — from the user's allowance file, the project's once the
// user trusted its content, or an always-allow answer in this session.
// Read-only mode runs only covered read-only tools and denies the rest;
// ask mode asks about the rest, offering to trust the project's file when
// its allowances would run the call.
func (a *approver) judgeTool(call event.ToolCall, need tools.Need) agent.Approval {
	mode, _ := a.ss.perms.snapshot()
	allow := agent.Approval{Verdict: agent.Allow, Decision: event.Decision{Subject: need.Subject, Verdict: event.VerdictAllow}}
	if mode == permission.ModeAuto {
		return allow
	}
	loaded, err := mcp.LoadRules(mcp.UserRulesPath(a.userRules), mcp.ProjectRulesPath(a.ss.cwd), a.trust)
	if err != nil {
		a.ss.log.Warn("mcp allowances", zap.String("session", a.ss.id), zap.Error(err))
		return denied(need.Subject, fmt.Sprintf("Not run: the MCP allowances cannot be read (%v). Fix the file or ask the user.", err),
			"denied: the MCP allowances cannot be read")
	}
	covers := func(rs mcp.Rules) bool {
		return rs.Allows(need.Server, need.Tool, need.ReadOnly) && (need.ReadOnly || mode != permission.ModeReadOnly)
	}
	switch {
	case covers(append(loaded.Rules, a.ss.perms.toolRules()...)):
		return allow
	case mode == permission.ModeReadOnly:
		return denied(need.Subject, fmt.Sprintf("Not run: the session is in %q mode, and %s is not a tool its MCP server marks read-only that the user allowed. Ask the user to switch modes if it is needed.", mode, need.Subject),
			fmt.Sprintf("denied in %s mode: %s is not an allowed read-only tool", mode, need.Subject))
	}
	var project *mcp.Loaded
	if covers(loaded.Untrusted) {
		project = &loaded
	}
	return agent.Approval{Verdict: agent.Ask, Ask: func(ctx context.Context) agent.Approval {
		return a.questionTool(ctx, call, need, project)
	}}
}

// questionTool asks the user about the MCP call whose card is open and
// pending, and marks it running again when allowed; project, when set, is
// an untrusted project allowance file that would let the call run: the
// user may trust it.
func (a *approver) questionTool(ctx context.Context, call event.ToolCall, need tools.Need, project *mcp.Loaded) agent.Approval {
	rule := toolRule(need)
	var trust *trustOffer
	if project != nil {
		trust = &trustOffer{
			name:    "Trust this project's MCP allowances and run: " + clipRunes(project.Summary(), 300),
			approve: func() error { return a.trust.Approve(project.ProjectPath, project.Hash) },
		}
	}
	answer, outcome := a.put(ctx, call, toolOptions(need, rule), trust)
	return a.answered(call, need.Subject, answer, a.applyTool(outcome, rule))
}

// toolRule is what an always-allow answer remembers for need: the
// server's read-only tools for a tool it marks read-only, else the tool.
func toolRule(need tools.Need) mcp.Rule {
	if need.ReadOnly {
		return mcp.Rule{Server: need.Server, ReadOnlyTools: true}
	}
	return mcp.Rule{Server: need.Server, Tool: need.Tool}
}

// toolOptions are Allow once, Always allow (the tool, or the server's
// read-only tools) in this session and in this project, and Reject.
func toolOptions(need tools.Need, rule mcp.Rule) []sdk.PermissionOption {
	what := fmt.Sprintf("`%s`", need.Subject)
	if rule.ReadOnlyTools {
		what = fmt.Sprintf("the read-only tools of `%s`", need.Server)
	}
	return []sdk.PermissionOption{
		{OptionId: optAllowOnce, Name: "Allow once", Kind: sdk.PermissionOptionKindAllowOnce},
		{OptionId: optAllowSession, Name: "Always allow " + what + " in this session", Kind: sdk.PermissionOptionKindAllowAlways},
		{OptionId: optAllowProject, Name: "Always allow " + what + " in this project", Kind: sdk.PermissionOptionKindAllowAlways},
		{OptionId: optReject, Name: "Reject", Kind: sdk.PermissionOptionKindRejectOnce},
	}
}

// applyTool turns the user's answer into an approval, remembering an
// always-allow in the session (journaled) and, for the project, in its
// allowance file.
func (a *approver) applyTool(outcome string, rule mcp.Rule) agent.Approval {
	remember := func(project bool) {
		if err := a.ss.journal.AppendState(stateToolAllow, a.ss.perms.rememberTool(rule)); err != nil {
			a.ss.log.Error("journal mcp allow", zap.String("session", a.ss.id), zap.Error(err))
		}
		if project {
			if err := mcp.SaveProjectRule(a.ss.cwd, rule, a.trust); err != nil {
				a.ss.log.Warn("save mcp allowance", zap.String("session", a.ss.id), zap.Error(err))
			}
		}
	}
	return answered(outcome, remember, "The user declined this tool call. Do not retry it; ask the user how to proceed.")
}

// toolRules are the MCP allowances chosen in this session.
func (p *permissions) toolRules() mcp.Rules {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.tools)
}

// rememberTool adds r to the session's MCP allowances; it returns the new
// list.
func (p *permissions) rememberTool(r mcp.Rule) []mcp.Rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !slices.Contains(p.tools, r) {
		p.tools = append(p.tools, r)
	}
	return slices.Clone(p.tools)
}

// restoreTools applies the journaled MCP allowances of a reopened session.
func (p *permissions) restoreTools(state map[string]json.RawMessage) {
	raw, ok := state[stateToolAllow]
	if !ok {
		return
	}
	var rules []mcp.Rule
	if json.Unmarshal(raw, &rules) != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tools = rules
}
