package presentation_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/executor/executorfake"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/presentation"
	"github.com/dsh-acp/dsh-acp/tools"
)

// todoCall runs todo_write for real and returns its call and result
// events, the result as a journal gives it back.
func todoCall(t *testing.T, id, args string) []event.Event {
	t.Helper()
	tool := tools.NewTodoWrite()
	res := tool.Run(context.Background(), tools.Call{ID: id, Args: json.RawMessage(args)})
	return []event.Event{
		event.ToolCall{ID: id, Name: tools.TodoWriteName, Args: json.RawMessage(args)},
		event.ToolResult{ID: id, Name: tools.TodoWriteName, Args: json.RawMessage(args), Result: roundTrip(t, res)},
	}
}

// plans draws evs and returns the plan updates' JSON, with "card" standing
// for each tool-call update, in order.
func plans(t *testing.T, replay bool, evs []event.Event) []string {
	t.Helper()
	var out []string
	p := presentation.NewPresenter(presentation.PresenterOptions{
		Send: func(u acp.SessionUpdate) {
			switch {
			case u.Plan != nil:
				b, err := json.Marshal(u)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, string(b))
			case u.ToolCall != nil || u.ToolCallUpdate != nil:
				if len(out) == 0 || out[len(out)-1] != "card" {
					out = append(out, "card")
				}
			}
		},
		Cards:  tools.NewBuiltin(executorfake.New(), tools.Config{}),
		Replay: replay,
	})
	for _, ev := range evs {
		p.Emit(ev)
	}
	return out
}

// A todo_write call sends the whole list as the plan right after its card;
// a failed one leaves the plan; a slash command leaves it; the next turn
// clears it, and a turn with no plan standing sends nothing. A replay of
// the same events draws the same plans.
func TestPlanFollowsTodoWrite(t *testing.T) {
	var evs []event.Event
	evs = append(evs, event.UserPrompt{Text: "fix the bug"})
	evs = append(evs, todoCall(t, "c1", `{"todos":[{"content":"Find it","status":"in_progress"},{"content":"Fix it","status":"pending"}]}`)...)
	evs = append(evs, todoCall(t, "c2", `{"todos":[{"content":"Find it","status":"completed"},{"content":"Find it","status":"pending"}]}`)...)
	evs = append(evs, todoCall(t, "c3", `{"todos":[{"content":"Find it","status":"completed"},{"content":"Fix it","status":"in_progress"}]}`)...)
	evs = append(evs, event.TurnEnd{StopReason: event.EndTurn}, event.Command{Text: "/usage"}, event.TurnEnd{StopReason: event.EndTurn})
	evs = append(evs, event.UserPrompt{Text: "thanks"}, event.TurnEnd{StopReason: event.EndTurn})
	evs = append(evs, event.UserPrompt{Text: "again"}, event.TurnEnd{StopReason: event.EndTurn})
	want := []string{
		"card",
		`{"entries":[{"content":"Find it","priority":"medium","status":"in_progress"},{"content":"Fix it","priority":"medium","status":"pending"}],"sessionUpdate":"plan"}`,
		"card", // c2 failed: no plan after its card, c3's card follows
		`{"entries":[{"content":"Find it","priority":"medium","status":"completed"},{"content":"Fix it","priority":"medium","status":"in_progress"}],"sessionUpdate":"plan"}`,
		`{"entries":[],"sessionUpdate":"plan"}`, // "thanks" starts a turn; "again" finds nothing to clear
	}
	for _, replay := range []bool{false, true} {
		if got := plans(t, replay, evs); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("replay=%v:\n got %s\nwant %s", replay, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// An empty list clears the plan at once, and nothing stands after it.
func TestPlanEmptyListClears(t *testing.T) {
	evs := todoCall(t, "c1", `{"todos":[{"content":"a","status":"pending"}]}`)
	evs = append(evs, todoCall(t, "c2", `{"todos":[]}`)...)
	evs = append(evs, event.UserPrompt{Text: "next"})
	got := plans(t, false, evs)
	if len(got) != 4 || got[3] != `{"entries":[],"sessionUpdate":"plan"}` {
		t.Errorf("updates %q: want card, plan, card, an empty plan, and no clear at the next turn", got)
	}
}

// A reopened session's presenter clears at its first turn the plan the
// client may show, then only what it sent.
func TestPlanMayStand(t *testing.T) {
	var got []string
	p := presentation.NewPresenter(presentation.PresenterOptions{
		Send:  func(u acp.SessionUpdate) { b, _ := json.Marshal(u); got = append(got, string(b)) },
		Cards: tools.NewBuiltin(executorfake.New(), tools.Config{}),
	})
	p.PlanMayStand()
	p.Emit(event.UserPrompt{Text: "next"})
	p.Emit(event.UserPrompt{Text: "and next"})
	if len(got) != 1 || got[0] != `{"entries":[],"sessionUpdate":"plan"}` {
		t.Errorf("updates %q, want one clear", got)
	}
}
