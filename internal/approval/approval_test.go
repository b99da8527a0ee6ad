package approval

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/mcp"
	"github.com/dsh-acp/dsh-acp/internal/permission"
	"github.com/dsh-acp/dsh-acp/tools"
)

type needs map[string]tools.Need

func (n needs) Needs(name string, _ json.RawMessage) (tools.Need, error) { return n[name], nil }

type journal map[string]json.RawMessage

func (j journal) AppendState(key string, v any) error {
	b, err := json.Marshal(v)
	j[key] = b
	return err
}

type asker struct {
	answer  string
	asked   [][]Option
	allowed []string
}

func (a *asker) Ask(_ context.Context, _ string, options []Option) string {
	a.asked = append(a.asked, options)
	return a.answer
}
func (a *asker) Allowed(id string) { a.allowed = append(a.allowed, id) }

// decide runs one call through p, answering a question if one is put.
func decide(p *Policy, name string) agent.Approval {
	a := p.Approve(context.Background(), tools.Session{Cwd: p.cfg.Cwd}, event.ToolCall{ID: "c1", Name: name})
	if a.Verdict == agent.Ask {
		a = a.Ask(context.Background())
	}
	return a
}

// An always-allow answer is remembered for the session, journaled, and
// restored into a reopened session's policy — for command prefixes and MCP
// tools alike, through the one flow.
func TestAlwaysAllowIsRememberedJournaledAndRestored(t *testing.T) {
	cwd := t.TempDir()
	n := needs{
		"bash":         {Kind: tools.NeedCommand, Subject: "touch x"},
		"mcp__s__edit": {Kind: tools.NeedTool, Subject: "mcp__s__edit", Server: "s", Tool: "edit"},
	}
	for _, name := range []string{"bash", "mcp__s__edit"} {
		t.Run(name, func(t *testing.T) {
			j, ask := journal{}, &asker{answer: AllowSession}
			p := New(Config{Cwd: cwd, Trust: permission.NewTrustStore(""), Tools: n, Journal: j, Ask: ask, Mode: permission.ModeAsk})
			if a := decide(p, name); a.Verdict != agent.Allow || len(ask.asked) != 1 || len(ask.allowed) != 1 {
				t.Fatalf("first call: %+v, asked %d, allowed %v", a, len(ask.asked), ask.allowed)
			}
			if a := decide(p, name); a.Verdict != agent.Allow || len(ask.asked) != 1 {
				t.Fatalf("second call asked again: %+v", a)
			}
			if len(j) != 1 {
				t.Fatalf("journal %v, want one allowance key", j)
			}
			reopened := New(Config{Cwd: cwd, Trust: permission.NewTrustStore(""), Tools: n, Journal: journal{}, Ask: &asker{answer: Reject}, Mode: permission.ModeAsk})
			reopened.Restore(j)
			if a := decide(reopened, name); a.Verdict != agent.Allow {
				t.Errorf("after restore: %+v, want allowed unasked", a)
			}
		})
	}
	_ = mcp.Rule{}
}

// A rejection denies with the user's reason; a cancelled question cancels
// the turn; read-only mode denies a write unasked.
func TestAnswers(t *testing.T) {
	n := needs{"write": {Kind: tools.NeedWrite, Subject: "/tmp/x"}}
	for _, tc := range []struct {
		answer string
		mode   permission.Mode
		want   agent.Verdict
	}{
		{Reject, permission.ModeAsk, agent.Deny},
		{Cancelled, permission.ModeAsk, agent.CancelTurn},
		{Failed, permission.ModeAsk, agent.Deny},
		{AllowOnce, permission.ModeAsk, agent.Allow},
		{AllowOnce, permission.ModeReadOnly, agent.Deny},
		{Reject, permission.ModeAuto, agent.Allow},
	} {
		p := New(Config{Cwd: t.TempDir(), Trust: permission.NewTrustStore(""), Tools: n, Journal: journal{}, Ask: &asker{answer: tc.answer}, Mode: tc.mode})
		if a := decide(p, "write"); a.Verdict != tc.want {
			t.Errorf("%s in %s mode: %v, want %v", tc.answer, tc.mode, a.Verdict, tc.want)
		}
	}
}
