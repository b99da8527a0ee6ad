package replay

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/tools"
)

func TestSettle(t *testing.T) {
	args := json.RawMessage(`{"command":"sleep 100"}`)
	argsB := json.RawMessage(`{"command":"ls"}`)
	call := event.ToolCall{ID: "c1", Name: "bash", Args: args}
	done := event.ToolResult{ID: "c1", Name: "bash", Args: args, Result: tools.WithOutcome(event.Result{Text: "ok"}, tools.Outcome{ExitCode: intp(0)})}
	interrupted := func(id string, a json.RawMessage, text string) event.ToolResult {
		return event.ToolResult{ID: id, Name: "bash", Args: a, Result: event.Result{Text: text, IsError: true}}
	}
	asked := event.AssistantMessage{ToolCalls: []event.CallInfo{{ID: "c1", Name: "bash", Args: args}, {ID: "c2", Name: "bash", Args: argsB}}}
	prompt1, prompt2 := event.UserPrompt{Text: "one"}, event.UserPrompt{Text: "two"}
	end := event.TurnEnd{StopReason: event.EndTurn}
	cancelled := event.TurnEnd{StopReason: event.Cancelled}
	pending := event.ToolCall{ID: "c1", Name: "bash", Args: args, Pending: true}
	allowed := event.Decision{ID: "c1", Subject: "sleep 100", Verdict: event.VerdictAsk, Outcome: "allow_once"}

	tests := []struct {
		name    string
		in, out []event.Event
	}{
		{"complete turn unchanged",
			[]event.Event{prompt1, call, done, end},
			[]event.Event{prompt1, call, done, end}},
		{"open call closed before the next prompt",
			[]event.Event{prompt1, call, prompt2, end},
			[]event.Event{prompt1, call, interrupted("c1", args, InterruptedText), prompt2, end}},
		{"open call closed at the end",
			[]event.Event{prompt1, call, event.Notice{Text: "n"}},
			[]event.Event{prompt1, call, event.Notice{Text: "n"}, interrupted("c1", args, InterruptedText)}},
		{"asked but never started",
			[]event.Event{prompt1, asked, call, done, prompt2},
			[]event.Event{prompt1, asked, call, done, event.ToolCall{ID: "c2", Name: "bash", Args: argsB}, interrupted("c2", argsB, NotStartedText), prompt2}},
		{"started and unstarted, both open",
			[]event.Event{prompt1, asked, call},
			[]event.Event{prompt1, asked, call, interrupted("c1", args, InterruptedText), event.ToolCall{ID: "c2", Name: "bash", Args: argsB}, interrupted("c2", argsB, NotStartedText)}},
		{"a crash while the user was asked: it never ran",
			[]event.Event{prompt1, pending},
			[]event.Event{prompt1, pending, interrupted("c1", args, NotStartedText)}},
		{"a crash after the user allowed it: it may have run",
			[]event.Event{prompt1, pending, allowed},
			[]event.Event{prompt1, pending, allowed, interrupted("c1", args, InterruptedText)}},
		{"turn ended with an open call",
			[]event.Event{prompt1, call, cancelled, prompt2},
			[]event.Event{prompt1, call, interrupted("c1", args, TurnEndedText), cancelled, prompt2}},
		{"turn without TurnEnd gets none",
			[]event.Event{prompt1, call, done, prompt2, call, done},
			[]event.Event{prompt1, call, done, prompt2, call, done}},
		{"result without call passes",
			[]event.Event{done, end},
			[]event.Event{done, end}},
		{"empty", nil, []event.Event{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.in)
			got := Settle(tt.in)
			if !reflect.DeepEqual(got, tt.out) {
				t.Errorf("Settle:\n got %#v\nwant %#v", got, tt.out)
			}
			if !reflect.DeepEqual(in, tt.in) {
				t.Error("Settle modified its input")
			}
		})
	}
}

func TestSettlerEmitError(t *testing.T) {
	boom := errors.New("boom")
	n := 0
	s := NewSettler(func(event.Event) error {
		n++
		if n == 2 {
			return boom
		}
		return nil
	})
	if err := s.Push(event.ToolCall{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Push(event.UserPrompt{}); !errors.Is(err, boom) {
		t.Errorf("Push = %v, want the emit error", err)
	}
}

func TestBackgroundTasks(t *testing.T) {
	res := func(id, status string) event.ToolResult {
		return event.ToolResult{ID: "c", Name: "bash", Result: event.Result{Task: &event.Task{ID: id, Status: status}}}
	}
	for _, tt := range []struct {
		r    event.Result
		want bool
	}{
		{event.Result{Task: &event.Task{ID: "bash-1", Status: "running"}}, true},
		{event.Result{Task: &event.Task{ID: "bash-1", Status: "completed"}}, false},
		{event.Result{Task: &event.Task{ID: "bash-1", Status: "killed"}}, false},
		{event.Result{Task: &event.Task{ID: "", Status: "running"}}, false},
		{tools.WithOutcome(event.Result{}, tools.Outcome{ExitCode: intp(0)}), false},
	} {
		if got := tt.r.Running(); got != tt.want {
			t.Errorf("%+v.Running() = %v", tt.r, got)
		}
	}
	s := NewSettler(func(event.Event) error { return nil })
	for _, ev := range []event.Event{res("bash-1", "running"), res("bash-2", "running"), res("bash-3", "running"), res("bash-2", "completed"), res("bash-3", "killed"), res("bash-1", "running")} {
		s.Push(ev)
	}
	if got := s.RunningTasks(); !reflect.DeepEqual(got, []string{"bash-1"}) {
		t.Errorf("RunningTasks = %q", got)
	}
}

// A call the daemon died in gets its checkpointed output as its card
// output, so the replayed card shows what the user had seen.
func TestSettlerKeepsCheckpointedOutput(t *testing.T) {
	got := Settle([]event.Event{
		event.UserPrompt{Text: "!x"},
		event.ToolCall{ID: "c1", Name: "bash", Args: json.RawMessage(`{"command":"x"}`)},
		event.OutputCheckpoint{ID: "c1", Data: "one\n"},
		event.OutputCheckpoint{ID: "other", Data: "not this call's\n"},
		event.OutputCheckpoint{ID: "c1", Data: "two\n"},
	})
	res, ok := got[len(got)-1].(event.ToolResult)
	if !ok {
		t.Fatalf("last event %T, want the synthetic result", got[len(got)-1])
	}
	if res.Result.CardOutput != "one\ntwo\n" || res.Result.Text != InterruptedText {
		t.Errorf("synthetic result %+v", res.Result)
	}
}
