package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/mcp"
	"github.com/dsh-acp/dsh-acp/replay"
)

// `dsh-acp replay` draws an MCP call as the session did, from the tool's
// journaled Info, though no server is there.
func TestReplayDrawsMCPCardsFromTheJournal(t *testing.T) {
	info, _ := json.Marshal(mcp.Info{Server: "GitHub", Tool: "list.issues", ReadOnly: true})
	args := json.RawMessage(`{"repo":"x"}`)
	l := &replay.Loaded{
		Header: replay.Header{ID: "s", Cwd: "/p"},
		Events: []event.Event{
			event.ToolCall{ID: "c1", Name: "mcp__GitHub__list_issues", Args: args},
			event.ToolResult{ID: "c1", Name: "mcp__GitHub__list_issues", Args: args, Result: event.Result{Text: "issue 1: broken"}},
		},
		State: map[string]json.RawMessage{mcp.StateKey("mcp__GitHub__list_issues"): info},
	}
	var out bytes.Buffer
	if err := printSession(&out, l, nil, false, 0); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "GitHub: list.issues") || !strings.Contains(s, "issue 1: broken") {
		t.Errorf("replay printed:\n%s", s)
	}
}
