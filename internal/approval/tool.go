package approval

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/mcp"
	"github.com/dsh-acp/dsh-acp/internal/permission"
	"github.com/dsh-acp/dsh-acp/tools"
)

// judgeTool decides a call of an MCP server's tool: auto mode runs it;
// otherwise it runs unasked only when an allowance covers it — the tool
// itself, or, for a tool its server marks read-only, that server's
// read-only tools — from the user's allowance file, the project's once the
// user trusted its content, or an always-allow answer in this session.
// Read-only mode runs only covered read-only tools and denies the rest;
// ask mode asks about the rest, offering to trust the project's file when
// its allowances would run the call.
func (p *Policy) judgeTool(call event.ToolCall, need tools.Need) agent.Approval {
	mode, _, sessionRules := p.snapshot()
	if mode == permission.ModeAuto {
		return allowed(need.Subject)
	}
	loaded, err := mcp.LoadRules(mcp.UserRulesPath(p.cfg.UserRules), mcp.ProjectRulesPath(p.cfg.Cwd), p.cfg.Trust)
	if err != nil {
		p.cfg.Log.Warn("mcp allowances", zap.String("session", p.cfg.Session), zap.Error(err))
		return denied(need.Subject, fmt.Sprintf("Not run: the MCP allowances cannot be read (%v). Fix the file or ask the user.", err),
			"denied: the MCP allowances cannot be read")
	}
	covers := func(rs mcp.Rules) bool {
		return rs.Allows(need.Server, need.Tool, need.ReadOnly) && (need.ReadOnly || mode != permission.ModeReadOnly)
	}
	switch {
	case covers(append(loaded.Rules, sessionRules...)):
		return allowed(need.Subject)
	case mode == permission.ModeReadOnly:
		return denied(need.Subject, fmt.Sprintf("Not run: the session is in %q mode, and %s is not a tool its MCP server marks read-only that the user allowed. Ask the user to switch modes if it is needed.", mode, need.Subject),
			fmt.Sprintf("denied in %s mode: %s is not an allowed read-only tool", mode, need.Subject))
	}
	rule := toolRule(need)
	q := question{call: call, subject: need.Subject, options: toolOptions(need, rule),
		remember: remember(p, &p.mcpRules, rule),
		declined: "The user declined this tool call. Do not retry it; ask the user how to proceed."}
	if covers(loaded.Untrusted) {
		q.trust = &trustOffer{
			name:    "Trust this project's MCP allowances and run: " + clipRunes(loaded.Summary(), 300),
			approve: func() error { return p.cfg.Trust.Approve(loaded.ProjectPath, loaded.Hash) },
		}
	}
	return p.ask(q)
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
// read-only tools) in this session — its name says how to allow it for the
// project — and Reject: one option of each kind.
func toolOptions(need tools.Need, rule mcp.Rule) []Option {
	what := fmt.Sprintf("`%s`", need.Subject)
	if rule.ReadOnlyTools {
		what = fmt.Sprintf("the read-only tools of `%s`", need.Server)
	}
	return []Option{
		{ID: AllowOnce, Name: "Allow once", Kind: KindAllowOnce},
		{ID: AllowSession, Name: "Always allow " + what + " in this session (for the project: /allow-project " + FormatToolRule(rule) + ")", Kind: KindAllowAlways},
		{ID: Reject, Name: "Reject", Kind: KindRejectOnce},
	}
}
