// Package approval is the daemon's permission policy for model-issued tool
// calls: a session's mode, the user's and the project's rule files (a
// project file's allow rules only once the user trusted its content), the
// MCP allowances, and what the user chose to always allow. It implements
// agent.Approver: it asks the tool what a call needs (tools.Need) and
// decides allow, deny or ask; a question goes to the user through an Asker
// (the ACP side sends it as session/request_permission), and an answer
// that always allows something is remembered for the session (journaled,
// restored on reload) — one flow for command prefixes and MCP tools alike.
//
// A question offers at most one option of each ACP kind (allow_once,
// allow_always, reject_once): clients key their buttons by kind, and two
// of one kind collapse or let a key choose a scope the user did not read.
// The allow_always slot is the session scope, or, when a project file the
// user has not trusted would run the call, trusting that file (the
// "always" answer there; it writes only the user's trust store, never the
// repository). Project scope is never an option: the user asks for it by
// typing /allow-project RULE (Policy.AllowProject), so nothing is written
// into the repository without the user meaning it.
//
// A new kind of need is one case in Policy.Approve and, when it may be
// remembered, one allowance list.
//
// # Known limits
//
// The rule files are read again for every call that needs them (so an edit
// applies at once); a file that cannot be read denies the call.
// When the trust offer takes the allow_always slot, the session scope is
// not offered for that question (Allow once, or /allow-project, remain).
// /allow-project's mcp:SERVER/(read-only) cannot name a tool called
// "(read-only)" (MCP tool names hold no parentheses).
package approval

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/mcp"
	"github.com/dsh-acp/dsh-acp/internal/permission"
	"github.com/dsh-acp/dsh-acp/tools"
)

// DeclinedByUser is the line a card shows when the user rejected its call.
const DeclinedByUser = "declined by the user"

// Option ids a question offers; Asker returns one of them, Cancelled or
// Failed.
const (
	AllowOnce    = "allow_once"
	AllowSession = "allow_always"
	Reject       = "reject"
	TrustProject = "trust_project_rules"
	Cancelled    = "cancelled" // the turn was cancelled, or the client cancelled the question
	Failed       = "error"     // the question could not be put
)

// Kinds of options, as ACP names them.
const (
	KindAllowOnce   = "allow_once"
	KindAllowAlways = "allow_always"
	KindRejectOnce  = "reject_once"
)

// Option is one answer a question offers.
type Option struct {
	ID, Name, Kind string
}

// Asker puts questions to the user about calls whose cards are open and
// pending.
type Asker interface {
	// Ask returns the id of the option the user chose, Cancelled or
	// Failed.
	Ask(ctx context.Context, callID string, options []Option) string
	// Allowed marks the call's card running again.
	Allowed(callID string)
}

// Journal records a session's state (*replay.Journal).
type Journal interface {
	AppendState(key string, value any) error
}

// Needer says what a call needs (*tools.Registry, *mcp.Toolbox).
type Needer interface {
	Needs(name string, args json.RawMessage) (tools.Need, error)
}

// Journal state keys of what a session remembers.
const (
	StateAllow     = "permission.allow" // command prefixes always allowed
	StateToolAllow = "permission.mcp"   // MCP allowances
)

// Config is what a session's Policy is built from.
type Config struct {
	Session string // for logs
	// Cwd is the session's project directory (its rule files).
	Cwd string
	// UserRules is the user's permission rule file ("" for none); the
	// user's MCP allowance file sits beside it (mcp.UserRulesPath).
	UserRules string
	// Trust keeps the project files the user approved.
	Trust   *permission.TrustStore
	Tools   Needer
	Journal Journal
	Ask     Asker
	Mode    permission.Mode // the starting mode
	Log     *zap.Logger
}

// Policy is one session's permission policy. Safe for concurrent use.
type Policy struct {
	cfg Config

	mu       sync.Mutex
	mode     permission.Mode
	prefixes allowance[string]   // command prefixes always allowed
	mcpRules allowance[mcp.Rule] // MCP allowances chosen in the session
}

// New returns the policy of a session.
func New(cfg Config) *Policy {
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	return &Policy{cfg: cfg, mode: cfg.Mode,
		prefixes: allowance[string]{key: StateAllow}, mcpRules: allowance[mcp.Rule]{key: StateToolAllow}}
}

// Mode is the session's permission mode.
func (p *Policy) Mode() permission.Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// SetMode changes it (the caller journals and announces it).
func (p *Policy) SetMode(m permission.Mode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
}

// Restore applies what a reopened session's journal remembered.
func (p *Policy) Restore(state map[string]json.RawMessage) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prefixes.restore(state)
	p.mcpRules.restore(state)
}

func (p *Policy) snapshot() (permission.Mode, []string, mcp.Rules) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode, slices.Clone(p.prefixes.items), slices.Clone(p.mcpRules.items)
}

// allowance is what a session always allows of one kind: remembered on an
// always-allow answer, journaled under key, restored from the journal.
type allowance[T comparable] struct {
	key   string
	items []T
}

func (a *allowance[T]) add(x T) []T {
	if !slices.Contains(a.items, x) {
		a.items = append(a.items, x)
	}
	return slices.Clone(a.items)
}

func (a *allowance[T]) restore(state map[string]json.RawMessage) {
	var items []T
	if raw, ok := state[a.key]; ok && json.Unmarshal(raw, &items) == nil {
		a.items = items
	}
}

// remember returns what an always-allow answer runs: x joins the list
// (journaled).
func remember[T comparable](p *Policy, list *allowance[T], x T) func() {
	return func() {
		p.mu.Lock()
		items := list.add(x)
		p.mu.Unlock()
		if err := p.cfg.Journal.AppendState(list.key, items); err != nil {
			p.cfg.Log.Error("journal allowance", zap.String("session", p.cfg.Session), zap.String("key", list.key), zap.Error(err))
		}
	}
}

// Approve decides one model-issued call from what its tool says it needs:
// nothing (the session's own tasks) runs; a command line goes to the
// judge; an MCP tool to the allowances; anything else, and a tool that
// declares nothing, is asked about in ask mode, denied in read-only mode
// and run in auto mode.
func (p *Policy) Approve(ctx context.Context, s tools.Session, call event.ToolCall) agent.Approval {
	need, err := p.cfg.Tools.Needs(call.Name, call.Args)
	switch {
	case err != nil:
		return agent.Approval{Verdict: agent.Allow} // the tool rejects the arguments without acting
	case need.Kind == tools.NeedNothing:
		return agent.Approval{Verdict: agent.Allow}
	case need.Kind == tools.NeedCommand:
		if need.Subject == "" {
			return agent.Approval{Verdict: agent.Allow} // the tool reports the empty command
		}
		return p.judgeCommand(s, call, need)
	case need.Kind == tools.NeedTool:
		return p.judgeTool(call, need)
	}
	return p.judgeOther(call, need)
}

// judgeOther decides a call that is not a command line by the mode alone.
func (p *Policy) judgeOther(call event.ToolCall, need tools.Need) agent.Approval {
	mode := p.Mode()
	switch {
	case need.Kind == tools.NeedRead || mode == permission.ModeAuto:
		return allowed(need.Subject)
	case mode == permission.ModeReadOnly:
		return denied(need.Subject, fmt.Sprintf("Not run: the %s tool may change things, and the session is in %q mode. Ask the user to switch modes if it is needed.", call.Name, mode),
			fmt.Sprintf("denied in %s mode: %s may change things", mode, call.Name))
	}
	return p.ask(question{call: call, subject: need.Subject, options: commandOptions(nil),
		declined: "The user declined to run this command. Do not retry it; ask the user how to proceed."})
}

func allowed(subject string) agent.Approval {
	return agent.Approval{Verdict: agent.Allow, Decision: event.Decision{Subject: subject, Verdict: event.VerdictAllow}}
}

// denied is a refusal: reason is what the model reads, shown the short
// line on the card.
func denied(subject, reason, shown string) agent.Approval {
	return agent.Approval{Verdict: agent.Deny, Reason: reason, UserReason: shown,
		Decision: event.Decision{Subject: subject, Verdict: event.VerdictDeny}}
}

// question is one question to put about a call.
type question struct {
	call     event.ToolCall
	subject  string
	options  []Option
	remember func()      // runs on an always-allow answer; nil: none offered
	trust    *trustOffer // an untrusted project file that would run the call
	declined string      // what the model reads when the user rejects it
}

// trustOffer is the allow_always option of a question, first, in place of
// the session scope: trust a project file (its content as shown: approve
// records the hash the user saw).
type trustOffer struct {
	name    string
	approve func() error
}

// ask defers to the user: the loop opens the card pending, then the
// returned Ask puts the question.
func (p *Policy) ask(q question) agent.Approval {
	return agent.Approval{Verdict: agent.Ask, Ask: func(ctx context.Context) agent.Approval { return p.put(ctx, q) }}
}

// put asks q and turns the answer into an approval: the decision records
// the answer; an allowed call's card runs again.
func (p *Policy) put(ctx context.Context, q question) agent.Approval {
	options := q.options
	if q.trust != nil {
		options = slices.DeleteFunc(slices.Clone(options), func(o Option) bool { return o.Kind == KindAllowAlways })
		options = append([]Option{{ID: TrustProject, Kind: KindAllowAlways, Name: q.trust.name}}, options...)
	}
	answer := p.cfg.Ask.Ask(ctx, q.call.ID, options)
	if ctx.Err() != nil {
		answer = Cancelled
	}
	outcome := answer
	if answer == TrustProject && q.trust != nil {
		if err := q.trust.approve(); err != nil {
			p.cfg.Log.Warn("trust project file", zap.String("session", p.cfg.Session), zap.Error(err))
		}
		outcome = AllowOnce
	}
	a := answered(outcome, q.remember, q.declined)
	if a.Verdict == agent.Allow {
		p.cfg.Ask.Allowed(q.call.ID)
	}
	a.Decision = event.Decision{Subject: q.subject, Verdict: event.VerdictAsk, Outcome: answer}
	return a
}

// answered turns the user's answer into an approval: an always-allow for
// the session runs remember, if any, first. An id the question did not
// offer is a rejection.
func answered(outcome string, remember func(), declined string) agent.Approval {
	switch outcome {
	case AllowOnce:
		return agent.Approval{Verdict: agent.Allow}
	case AllowSession:
		if remember == nil {
			break
		}
		remember()
		return agent.Approval{Verdict: agent.Allow}
	case Cancelled:
		return agent.Approval{Verdict: agent.CancelTurn}
	case Failed:
		return agent.Approval{Verdict: agent.Deny, Reason: "Not run: the permission request to the user failed.",
			UserReason: "not run: the permission question failed"}
	}
	return agent.Approval{Verdict: agent.Deny, Reason: declined, UserReason: DeclinedByUser}
}

// clipRunes shortens s to at most n runes, with "…" when cut.
func clipRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
