package tools_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor/executorfake"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/tools"
)

// bash ends a card from its result alone: the arguments, decoded once when
// the card opened, are not read again (replay of a long session would pay
// for a second decode per call).
func TestBashResultIgnoresArguments(t *testing.T) {
	bash, _ := tools.NewBash(executorfake.New(), tools.Config{}).Lookup(tools.BashName)
	results := []event.Result{
		tools.WithOutcome(event.Result{Text: "ok", CardOutput: "ok\n"}, tools.Outcome{ExitCode: intp(0)}),
		tools.WithOutcome(event.Result{Text: "[timed out after 5ms]"}, tools.Outcome{ExitCode: intp(0), TimedOut: true, TimeoutMs: 5}),
		{Text: "cannot run command", IsError: true},
		{Declined: "rejected by the user"},
		{Text: "Started background task bash-1.", Task: &event.Task{ID: "bash-1", Status: event.TaskRunning}},
	}
	for i, res := range results {
		want := bash.PresentResult(json.RawMessage(`{"command":"make","description":"Build"}`), res)
		for _, args := range []json.RawMessage{nil, json.RawMessage(`not json`), json.RawMessage(`{"command":"other","run_in_background":true}`)} {
			if got := bash.PresentResult(args, res); !reflect.DeepEqual(got, want) {
				t.Errorf("result %d with args %q: %+v, want %+v", i, args, got, want)
			}
		}
	}
}
