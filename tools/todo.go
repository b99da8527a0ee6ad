package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// TodoWriteName is the name of the plan tool.
const TodoWriteName = "todo_write"

// Todo statuses, as the model writes them and a plan shows them.
const (
	TodoPending    = "pending"
	TodoInProgress = "in_progress"
	TodoCompleted  = "completed"
)

// todoWrite is dsh's todo_write: the model's task list, replaced wholesale
// on every call. It touches nothing but the session's plan: the list is
// the result's payload (journaled with the result) and the result intent's
// Plan (drawn as the client's plan), so a reload draws the same plan from
// the same record. Several todos may be in progress at once.
type todoWrite struct {
	text   func() string
	schema func() json.RawMessage
}

// NewTodoWrite returns the todo_write tool (dsh's contract: see
// docs/tools.md). It needs no executor and no permission.
func NewTodoWrite() Tool {
	return &todoWrite{
		text:   sync.OnceValue(func() string { return render("todo_write.tmpl", textData{}) }),
		schema: sync.OnceValue(todoSchema),
	}
}

func (t *todoWrite) Name() string            { return TodoWriteName }
func (t *todoWrite) Description() string     { return t.text() }
func (t *todoWrite) Schema() json.RawMessage { return t.schema() }

// Needs is nothing, whatever the arguments: the call changes only the
// session's own plan, so it runs unasked in every mode (Run reports bad
// arguments to the model).
func (t *todoWrite) Needs(json.RawMessage) (Need, error) { return Need{Kind: NeedNothing}, nil }

// todoPayload is the result's payload: the list as validated (contents
// trimmed), exactly what the plan shows.
type todoPayload struct {
	Todos []PlanEntry `json:"todos"`
}

// Run validates the whole list and answers with its counts. Invalid
// arguments are an IsError result whose text starts "Error: " and changes
// nothing: the previous plan stands.
func (t *todoWrite) Run(_ context.Context, call Call) event.Result {
	todos, err := decodeTodos(call.Args)
	if err != nil {
		return event.Result{Text: "Error: " + err.Error(), IsError: true}
	}
	var pending, active, done int
	for _, td := range todos {
		switch td.Status {
		case TodoPending:
			pending++
		case TodoInProgress:
			active++
		case TodoCompleted:
			done++
		}
	}
	payload, err := json.Marshal(todoPayload{Todos: todos})
	if err != nil { // unreachable: strings only
		return event.Result{Text: "Error: " + err.Error(), IsError: true}
	}
	return event.Result{
		Text:    fmt.Sprintf("Updated todo list: %d pending, %d in progress, %d completed.", pending, active, done),
		Payload: payload,
	}
}

// decodeTodos reads and validates the list, in dsh's order: the shape
// first (an object with the array `todos`, each todo an object with only
// `content` and `status`, a known status), then the values (a non-empty
// content, no two alike).
func decodeTodos(args json.RawMessage) ([]PlanEntry, error) {
	f, err := parseFields(args)
	if err != nil {
		return nil, err
	}
	if extra := otherKeys(f, "todos"); len(extra) > 0 {
		return nil, fmt.Errorf("invalid arguments: unknown key %s (the only argument is `todos`)", extra[0])
	}
	raw, ok := f.raw("todos")
	var items []json.RawMessage
	if !ok || json.Unmarshal(raw, &items) != nil {
		return nil, errors.New("invalid todos: `todos` must be an array of {content, status}")
	}
	todos := make([]PlanEntry, 0, len(items))
	for _, item := range items {
		td, err := decodeTodo(item)
		if err != nil {
			return nil, err
		}
		todos = append(todos, td)
	}
	seen := make(map[string]bool, len(todos))
	for i, td := range todos {
		td.Content = strings.TrimSpace(td.Content)
		if td.Content == "" {
			return nil, errors.New("invalid todo: `content` must be a non-empty string")
		}
		if seen[td.Content] {
			return nil, fmt.Errorf("invalid todos: duplicate content %s", jsString(td.Content))
		}
		seen[td.Content] = true
		todos[i] = td
	}
	return todos, nil
}

// decodeTodo reads one todo's shape.
func decodeTodo(item json.RawMessage) (PlanEntry, error) {
	var f fields
	if json.Unmarshal(item, &f) != nil || f == nil {
		return PlanEntry{}, errors.New("invalid todo: each todo must be an object {content, status}")
	}
	if extra := otherKeys(f, "content", "status"); len(extra) > 0 {
		return PlanEntry{}, fmt.Errorf("invalid todo: unknown key %s (a todo has only `content` and `status`)", extra[0])
	}
	var td PlanEntry
	if v, ok := f.raw("content"); !ok || json.Unmarshal(v, &td.Content) != nil {
		return PlanEntry{}, errors.New("invalid todo: `content` must be a non-empty string")
	}
	v, _ := f.raw("status")
	if json.Unmarshal(v, &td.Status) != nil ||
		(td.Status != TodoPending && td.Status != TodoInProgress && td.Status != TodoCompleted) {
		return PlanEntry{}, errors.New("invalid todo: `status` must be one of pending, in_progress, completed")
	}
	return td, nil
}

// otherKeys are f's keys not among known, sorted, each in backquotes.
func otherKeys(f fields, known ...string) []string {
	var out []string
	for k := range f {
		if !contains(known, k) {
			out = append(out, "`"+strings.ToValidUTF8(k, "\uFFFD")+"`")
		}
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// jsString is s as a JSON string the way JavaScript's JSON.stringify
// writes it (dsh's duplicate-content error): no HTML escaping.
func jsString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// PresentCall opens a small generic card: the plan itself is the client's
// plan, drawn from the result.
func (t *todoWrite) PresentCall(args json.RawMessage) CallIntent {
	return CallIntent{Card: CardGeneric, Title: "Update todo list", Kind: kindThink, RawInput: rawValue(args)}
}

// PresentResult ends the card with the result's line and, for a valid
// list, sets the session's plan to it.
func (t *todoWrite) PresentResult(_ json.RawMessage, er event.Result) ResultIntent {
	res := resultOf(er)
	if res.IsError || res.Declined != "" {
		return errorIntent(res)
	}
	out := genericResult(res, false, false)
	var p todoPayload
	if len(er.Payload) > 0 && json.Unmarshal(er.Payload, &p) == nil {
		out.Plan = &Plan{Entries: p.Todos}
		if out.Plan.Entries == nil {
			out.Plan.Entries = []PlanEntry{}
		}
	}
	out.RawOutput = nil // the plan shows the list; the text says the counts
	return out
}

// todoSchema is dsh's todo_write schema.
func todoSchema() json.RawMessage {
	return mustSchema(map[string]any{
		"type":                 "object",
		"additionalProperties": false,
		"required":             []string{"todos"},
		"properties": map[string]any{
			"todos": map[string]any{
				"type":        "array",
				"description": "The COMPLETE task list, replacing any previous list.",
				"items": map[string]any{
					"type":                 "object",
					"additionalProperties": false,
					"required":             []string{"content", "status"},
					"properties": map[string]any{
						"content": map[string]any{
							"type":        "string",
							"description": "What the task is — a short imperative line.",
						},
						"status": map[string]any{
							"type":        "string",
							"enum":        []string{TodoPending, TodoInProgress, TodoCompleted},
							"description": "pending (not started) | in_progress (now) | completed (done).",
						},
					},
				},
			},
		},
	})
}
