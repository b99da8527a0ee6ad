package tools_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor/executorfake"
	"github.com/dsh-acp/dsh-acp/tools"
)

func runTodo(t *testing.T, args string) (text string, isError bool, plan *tools.Plan) {
	t.Helper()
	tool := tools.NewTodoWrite()
	res := tool.Run(context.Background(), tools.Call{ID: "c1", Args: json.RawMessage(args), Session: session})
	return res.Text, res.IsError, tool.PresentResult(json.RawMessage(args), res).Plan
}

// dsh's contract, word for word: the success line, the two value errors,
// and an error naming any key other than content and status.
func TestTodoWriteContract(t *testing.T) {
	tests := []struct {
		name, args, want string
		isError          bool
	}{
		{"counts", `{"todos":[{"content":"a","status":"completed"},{"content":"b","status":"in_progress"},{"content":"c","status":"pending"},{"content":"d","status":"pending"}]}`,
			"Updated todo list: 2 pending, 1 in progress, 1 completed.", false},
		{"several in progress", `{"todos":[{"content":"a","status":"in_progress"},{"content":"b","status":"in_progress"}]}`,
			"Updated todo list: 0 pending, 2 in progress, 0 completed.", false},
		{"empty list clears", `{"todos":[]}`, "Updated todo list: 0 pending, 0 in progress, 0 completed.", false},
		{"empty content", `{"todos":[{"content":"","status":"pending"}]}`,
			"Error: invalid todo: `content` must be a non-empty string", true},
		{"blank content", `{"todos":[{"content":" \t","status":"pending"}]}`,
			"Error: invalid todo: `content` must be a non-empty string", true},
		{"content not a string", `{"todos":[{"content":7,"status":"pending"}]}`,
			"Error: invalid todo: `content` must be a non-empty string", true},
		{"duplicate", `{"todos":[{"content":"Run the tests","status":"pending"},{"content":"Run the tests","status":"completed"}]}`,
			`Error: invalid todos: duplicate content "Run the tests"`, true},
		{"duplicate after trimming, JSON-quoted as dsh does", `{"todos":[{"content":"a <b> \"c\"","status":"pending"},{"content":"  a <b> \"c\" ","status":"pending"}]}`,
			`Error: invalid todos: duplicate content "a <b> \"c\""`, true},
		{"extra key", `{"todos":[{"content":"a","status":"pending","priority":"high"}]}`,
			"Error: invalid todo: unknown key `priority` (a todo has only `content` and `status`)", true},
		{"extra key named first", `{"todos":[{"content":"","status":"done","activeForm":"Doing a"}]}`,
			"Error: invalid todo: unknown key `activeForm` (a todo has only `content` and `status`)", true},
		{"unknown status", `{"todos":[{"content":"a","status":"done"}]}`,
			"Error: invalid todo: `status` must be one of pending, in_progress, completed", true},
		{"missing status", `{"todos":[{"content":"a"}]}`,
			"Error: invalid todo: `status` must be one of pending, in_progress, completed", true},
		{"todos not an array", `{"todos":"a, b"}`, "Error: invalid todos: `todos` must be an array of {content, status}", true},
		{"no todos", `{}`, "Error: invalid todos: `todos` must be an array of {content, status}", true},
		{"todo not an object", `{"todos":["a"]}`, "Error: invalid todo: each todo must be an object {content, status}", true},
		{"unknown argument", `{"todos":[],"merge":true}`, "Error: invalid arguments: unknown key `merge` (the only argument is `todos`)", true},
		{"not JSON", `{"todos":[`, "Error: invalid arguments: not valid JSON (unexpected end of JSON input)", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, isError, plan := runTodo(t, tt.args)
			if text != tt.want || isError != tt.isError {
				t.Errorf("text %q (isError %v), want %q (%v)", text, isError, tt.want, tt.isError)
			}
			if isError != (plan == nil) {
				t.Errorf("plan %+v for isError %v: a failed call must leave the plan, a good one set it", plan, isError)
			}
		})
	}
}

// The plan is the list as validated: contents trimmed, in order, statuses
// as written; the card is small and generic.
func TestTodoWritePlan(t *testing.T) {
	args := `{"todos":[{"content":"  Read the code ","status":"completed"},{"content":"Fix it","status":"in_progress"},{"content":"Test it","status":"pending"}]}`
	_, _, plan := runTodo(t, args)
	want := []tools.PlanEntry{{Content: "Read the code", Status: "completed"}, {Content: "Fix it", Status: "in_progress"}, {Content: "Test it", Status: "pending"}}
	if plan == nil || len(plan.Entries) != len(want) {
		t.Fatalf("plan %+v", plan)
	}
	for i := range want {
		if plan.Entries[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, plan.Entries[i], want[i])
		}
	}
	if _, _, empty := runTodo(t, `{"todos":[]}`); empty == nil || empty.Entries == nil || len(empty.Entries) != 0 {
		t.Errorf("an empty list gives plan %+v, want an empty (non-nil) one", empty)
	}
	in := tools.NewTodoWrite().PresentCall(json.RawMessage(args))
	if in.Card != tools.CardGeneric || in.Title != "Update todo list" || in.Kind != "think" || len(in.Content) != 0 {
		t.Errorf("call intent %+v", in)
	}
}

// The tool is offered with dsh's schema and a description that says when
// a list helps and to keep it current; it needs nothing in any mode.
func TestTodoWriteOffered(t *testing.T) {
	set := tools.NewBuiltin(executorfake.New(), tools.Config{})
	var names []string
	for _, tool := range set.All() {
		names = append(names, tool.Name())
	}
	if strings.Join(names, ",") != "bash,bash_output,bash_kill,todo_write" {
		t.Fatalf("NewBuiltin offers %v", names)
	}
	tool, _ := set.Lookup(tools.TodoWriteName)
	var schema struct {
		Type       string   `json:"type"`
		Required   []string `json:"required"`
		Additional bool     `json:"additionalProperties"`
		Properties struct {
			Todos struct {
				Type  string `json:"type"`
				Items struct {
					Required   []string `json:"required"`
					Additional bool     `json:"additionalProperties"`
					Properties struct {
						Content struct{ Type string } `json:"content"`
						Status  struct {
							Type string
							Enum []string
						} `json:"status"`
					} `json:"properties"`
				} `json:"items"`
			} `json:"todos"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(tool.Schema(), &schema); err != nil {
		t.Fatal(err)
	}
	items := schema.Properties.Todos.Items
	if schema.Type != "object" || strings.Join(schema.Required, ",") != "todos" || schema.Additional ||
		schema.Properties.Todos.Type != "array" || strings.Join(items.Required, ",") != "content,status" || items.Additional ||
		items.Properties.Content.Type != "string" || strings.Join(items.Properties.Status.Enum, ",") != "pending,in_progress,completed" {
		t.Errorf("schema %s", tool.Schema())
	}
	for _, want := range []string{"multi-step work", "ENTIRE list", "REPLACES", "`completed` the moment it is done", "in_progress"} {
		if !strings.Contains(tool.Description(), want) {
			t.Errorf("description lacks %q:\n%s", want, tool.Description())
		}
	}
	for _, args := range []string{`{"todos":[]}`, `nonsense`, ``} {
		if need, err := set.Needs(tools.TodoWriteName, json.RawMessage(args)); err != nil || need.Kind != tools.NeedNothing {
			t.Errorf("Needs(%q) = %+v, %v; want NeedNothing", args, need, err)
		}
	}
}
