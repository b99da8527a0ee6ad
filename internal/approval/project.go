package approval

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dsh-acp/dsh-acp/internal/mcp"
	"github.com/dsh-acp/dsh-acp/internal/permission"
)

// Project scope. A question never offers it (see the package doc): the
// user types /allow-project RULE, and AllowProject saves RULE into the
// project's file the way an always-allow answer for the project once did.

// toolRulePrefix starts a RULE that names MCP tools; readOnlyToolsWord, as
// its tool, stands for every tool the server marks read-only (no MCP tool
// name holds parentheses).
const (
	toolRulePrefix    = "mcp:"
	readOnlyToolsWord = "(read-only)"
)

// FormatToolRule is r as /allow-project takes it: mcp:SERVER/TOOL, or
// mcp:SERVER/(read-only) for the server's read-only tools.
func FormatToolRule(r mcp.Rule) string {
	if r.ReadOnlyTools {
		return toolRulePrefix + r.Server + "/" + readOnlyToolsWord
	}
	return toolRulePrefix + r.Server + "/" + r.Tool
}

// parseToolRule reads mcp:SERVER/TOOL (the server name may hold "/": the
// tool is after the last one).
func parseToolRule(s string) (mcp.Rule, error) {
	rest := strings.TrimPrefix(s, toolRulePrefix)
	i := strings.LastIndex(rest, "/")
	if i <= 0 || i == len(rest)-1 {
		return mcp.Rule{}, fmt.Errorf("%q names no tool: write mcp:SERVER/TOOL, or mcp:SERVER/%s for the server's read-only tools", s, readOnlyToolsWord)
	}
	server, tool := rest[:i], rest[i+1:]
	if tool == readOnlyToolsWord {
		return mcp.Rule{Server: server, ReadOnlyTools: true}, nil
	}
	return mcp.Rule{Server: server, Tool: tool}, nil
}

// ErrNoRule is AllowProject's error for an empty rule.
var ErrNoRule = errors.New("name what to allow: a command prefix (program and subcommand, e.g. `git push`), or mcp:SERVER/TOOL")

// AllowProject always allows rule — a command prefix of at least program
// and subcommand, or mcp:SERVER/TOOL (mcp:SERVER/(read-only)) — for the
// project: it is saved into the project's file (.dsh-acp/permissions.json
// or .dsh-acp/mcp.json of the session's directory; a file the user trusted
// stays trusted, an untrusted one stays untrusted) and, like an
// always-allow answer, remembered for this session (journaled). It returns
// the rule as saved and the file's path. Nothing is saved when the rule is
// refused.
func (p *Policy) AllowProject(rule string) (saved, path string, err error) {
	rule = strings.Join(strings.Fields(rule), " ")
	switch {
	case rule == "":
		return "", "", ErrNoRule
	case strings.HasPrefix(rule, toolRulePrefix):
		r, err := parseToolRule(rule)
		if err != nil {
			return "", "", err
		}
		if err := mcp.SaveProjectRule(p.cfg.Cwd, r, p.cfg.Trust); err != nil {
			return "", "", err
		}
		remember(p, &p.mcpRules, r)()
		return FormatToolRule(r), mcp.ProjectRulesPath(p.cfg.Cwd), nil
	}
	if err := p.cfg.Trust.SaveProjectAllow(p.cfg.Cwd, rule); err != nil {
		return "", "", err
	}
	remember(p, &p.prefixes, rule)()
	return rule, permission.ProjectRulesPath(p.cfg.Cwd), nil
}
