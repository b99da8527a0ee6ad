package acp_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
	"github.com/dsh-acp/dsh-acp/tools"
)

// todo_write end to end (issue 27): offered with dsh's schema, answered with
// dsh's exact texts, drawn as the client's plan, asked about never, redrawn
// by session/load, cleared by the next turn.

// planUpdates are the session's plan updates, as their entries' JSON.
func planUpdates(t *testing.T, updates []json.RawMessage) []string {
	t.Helper()
	var out []string
	for _, raw := range updates {
		if acptest.UpdateKind(raw) != "plan" {
			continue
		}
		var u struct {
			Entries json.RawMessage `json:"entries"`
		}
		if err := json.Unmarshal(raw, &u); err != nil {
			t.Fatalf("plan update %s: %v", raw, err)
		}
		out = append(out, string(u.Entries))
	}
	return out
}

const (
	todoArgs    = `{"todos":[{"content":"Read the code","status":"completed"},{"content":"Fix the bug","status":"in_progress"},{"content":"Run the tests","status":"pending"}]}`
	todoEntries = `[{"content":"Read the code","priority":"medium","status":"completed"},{"content":"Fix the bug","priority":"medium","status":"in_progress"},{"content":"Run the tests","priority":"medium","status":"pending"}]`
	todoDup     = `{"todos":[{"content":"Fix the bug","status":"pending"},{"content":"Fix the bug","status":"completed"}]}`
)

func TestTodoWriteEndToEnd(t *testing.T) {
	// ask mode, the default: a question would be counted (and answered no).
	c := startClient(t, acptest.ZedCapabilities(), "reject_once", nil, "DSH_MODE=ask")
	c.model.Push(
		llmtest.Calls(llmtest.Call{ID: "call_plan", Name: tools.TodoWriteName, Args: todoArgs}),
		llmtest.Calls(llmtest.Call{ID: "call_dup", Name: tools.TodoWriteName, Args: todoDup}),
		llmtest.Reply("planned"),
	)
	c.prompt("fix the bug")

	// Offered with dsh's schema.
	var offered *llmtest.Tool
	for _, tool := range c.model.Requests()[0].Tools {
		if tool.Function.Name == tools.TodoWriteName {
			offered = &tool
		}
	}
	if offered == nil {
		t.Fatalf("todo_write not offered: %v", c.model.Requests()[0].ToolNames())
	}
	if want := tools.NewTodoWrite().Schema(); string(offered.Function.Parameters) != string(want) {
		t.Errorf("schema offered %s, want %s", offered.Function.Parameters, want)
	}
	if !strings.Contains(offered.Function.Description, "multi-step work") {
		t.Errorf("description %q", offered.Function.Description)
	}

	// dsh's exact texts; nothing asked.
	if got := toolResultOf(t, c.model, "call_plan"); got != "Updated todo list: 1 pending, 1 in progress, 1 completed." {
		t.Errorf("success text %q", got)
	}
	if got := toolResultOf(t, c.model, "call_dup"); got != `Error: invalid todos: duplicate content "Fix the bug"` {
		t.Errorf("duplicate text %q", got)
	}
	if n := c.asked.Load(); n != 0 {
		t.Errorf("%d permission questions in ask mode", n)
	}

	// The plan: the same entries, once (the failed call leaves it).
	if got := planUpdates(t, c.a.Updates(c.sid)); len(got) != 1 || got[0] != todoEntries {
		t.Errorf("plan updates %q, want one with %s", got, todoEntries)
	}

	// session/load redraws it.
	d := c.reload()
	if got := planUpdates(t, d.Updates(c.sid)); len(got) == 0 || got[len(got)-1] != todoEntries {
		t.Errorf("replayed plan updates %q, want the last to be %s", got, todoEntries)
	}

	// The next turn clears it.
	c.a = d
	c.model.Push(llmtest.Reply("hello"))
	c.prompt("thanks")
	if got := planUpdates(t, d.Updates(c.sid)); len(got) == 0 || got[len(got)-1] != `[]` {
		t.Errorf("plan updates after the next turn %q, want the last to clear the plan", got)
	}
}
