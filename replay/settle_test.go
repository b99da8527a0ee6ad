package replay

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/tools"
)

func TestSettle(t *testing.T) {
	args := json.RawMessage(`{"command":"sleep 100"}`)
	argsB := json.RawMessage(`{"command":"ls"}`)
	call := agent.ToolCall{ID: "c1", Name: "bash", Args: args}
	done := agent.ToolResult{ID: "c1", Name: "bash", Args: args, Result: tools.Result{Text: "ok", ExitCode: intp(0)}}
	interrupted := func(id string, a json.RawMessage, text string) agent.ToolResult {
		return agent.ToolResult{ID: id, Name: "bash", Args: a, Result: tools.Result{Text: text, IsError: true}}
	}
	asked := agent.AssistantMessage{ToolCalls: []agent.ToolCallInfo{{ID: "c1", Name: "bash", Args: args}, {ID: "c2", Name: "bash", Args: argsB}}}
	prompt1, prompt2 := agent.UserPrompt{Text: "one"}, agent.UserPrompt{Text: "two"}
	end := agent.TurnEnd{StopReason: agent.EndTurn}
	cancelled := agent.TurnEnd{StopReason: agent.Cancelled}

	tests := []struct {
		name    string
		in, out []agent.Event
	}{
		{"complete turn unchanged",
			[]agent.Event{prompt1, call, done, end},
			[]agent.Event{prompt1, call, done, end}},
		{"open call closed before the next prompt",
			[]agent.Event{prompt1, call, prompt2, end},
			[]agent.Event{prompt1, call, interrupted("c1", args, InterruptedText), prompt2, end}},
		{"open call closed at the end",
			[]agent.Event{prompt1, call, agent.Notice{Text: "n"}},
			[]agent.Event{prompt1, call, agent.Notice{Text: "n"}, interrupted("c1", args, InterruptedText)}},
		{"asked but never started",
			[]agent.Event{prompt1, asked, call, done, prompt2},
			[]agent.Event{prompt1, asked, call, done, agent.ToolCall{ID: "c2", Name: "bash", Args: argsB}, interrupted("c2", argsB, NotStartedText), prompt2}},
		{"started and unstarted, both open",
			[]agent.Event{prompt1, asked, call},
			[]agent.Event{prompt1, asked, call, interrupted("c1", args, InterruptedText), agent.ToolCall{ID: "c2", Name: "bash", Args: argsB}, interrupted("c2", argsB, NotStartedText)}},
		{"turn ended with an open call",
			[]agent.Event{prompt1, call, cancelled, prompt2},
			[]agent.Event{prompt1, call, interrupted("c1", args, TurnEndedText), cancelled, prompt2}},
		{"turn without TurnEnd gets none",
			[]agent.Event{prompt1, call, done, prompt2, call, done},
			[]agent.Event{prompt1, call, done, prompt2, call, done}},
		{"result without call passes",
			[]agent.Event{done, end},
			[]agent.Event{done, end}},
		{"empty", nil, []agent.Event{}},
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
	s := NewSettler(func(agent.Event) error {
		n++
		if n == 2 {
			return boom
		}
		return nil
	})
	if err := s.Push(agent.ToolCall{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Push(agent.UserPrompt{}); !errors.Is(err, boom) {
		t.Errorf("Push = %v, want the emit error", err)
	}
}

func TestBackgroundTasks(t *testing.T) {
	res := func(id, status string) agent.ToolResult {
		return agent.ToolResult{ID: "c", Name: "bash", Result: tools.Result{TaskID: id, TaskStatus: status}}
	}
	for _, tt := range []struct {
		r    tools.Result
		want bool
	}{
		{tools.Result{TaskID: "bash-1", TaskStatus: "running"}, true},
		{tools.Result{TaskID: "bash-1", TaskStatus: "completed"}, false},
		{tools.Result{TaskID: "bash-1", TaskStatus: "killed"}, false},
		{tools.Result{TaskStatus: "running"}, false},
		{tools.Result{ExitCode: intp(0)}, false},
	} {
		if got := IsBackgroundStart(tt.r); got != tt.want {
			t.Errorf("IsBackgroundStart(%+v) = %v", tt.r, got)
		}
	}
	s := NewSettler(func(agent.Event) error { return nil })
	for _, ev := range []agent.Event{res("bash-1", "running"), res("bash-2", "running"), res("bash-3", "running"), res("bash-2", "completed"), res("bash-3", "killed"), res("bash-1", "running")} {
		s.Push(ev)
	}
	if got := s.RunningTasks(); !reflect.DeepEqual(got, []string{"bash-1"}) {
		t.Errorf("RunningTasks = %q", got)
	}
}
