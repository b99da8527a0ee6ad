package agent_test

import (
	"context"
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
	"github.com/dsh-acp/dsh-acp/tools"
)

func runDirect(t *testing.T, s *agent.Session, ctx context.Context, cmd string) event.StopReason {
	t.Helper()
	stop, err := s.RunDirect(ctx, cmd)
	if err != nil {
		t.Fatalf("RunDirect: %v", err)
	}
	return stop
}

func TestDirectCommandWithoutModel(t *testing.T) {
	approverCalled := false
	never := approverFunc(func(context.Context, tools.Session, event.ToolCall) agent.Approval {
		approverCalled = true
		return agent.Approval{Verdict: agent.Deny}
	})
	f := newFixture(t, options{noModel: true, approver: never})
	if stop := runDirect(t, f.sess, t.Context(), "ls -la"); stop != event.EndTurn {
		t.Fatalf("stop = %s", stop)
	}
	evs := f.rec.events()
	if len(evs) != 5 {
		t.Fatalf("events: %#v", evs)
	}
	call, ok := evs[1].(event.ToolCall)
	if !ok || !regexp.MustCompile(`^user-[0-9a-f]{12}$`).MatchString(call.ID) {
		t.Fatalf("call = %#v", evs[1])
	}
	wantArgs := json.RawMessage(`{"command":"ls -la"}`)
	want := []event.Event{
		event.UserPrompt{Text: "!ls -la"},
		event.ToolCall{ID: call.ID, Name: "bash", Args: wantArgs, Direct: true},
		event.ToolOutput{ID: call.ID, Data: "ran ls -la\n"},
		event.ToolResult{ID: call.ID, Name: "bash", Args: wantArgs,
			Result: event.Result{Text: "ran ls -la\n", CardOutput: "ran ls -la\n"}},
		event.TurnEnd{StopReason: event.EndTurn},
	}
	if !reflect.DeepEqual(evs, want) {
		t.Errorf("events:\n%#v\nwant\n%#v", evs, want)
	}
	if approverCalled {
		t.Error("the Approver was asked about a direct command")
	}
	if len(f.srv.Requests()) != 0 {
		t.Error("a direct command reached the model")
	}
}

func TestDirectCommandEntersHistory(t *testing.T) {
	f := newFixture(t, options{}, llmtest.Reply("I see the files."))
	runDirect(t, f.sess, t.Context(), "ls")
	f.prompt(t, t.Context(), "what did I see?")
	want := "user: \"The user ran this command directly (not a call of yours):\\n$ ls\\n\\nIts result:\\nran ls\\n\\n\\nwhat did I see?\"\n"
	if got := conversation(f.srv.Last()); got != want {
		t.Errorf("request:\n%s\nwant\n%s", got, want)
	}
	if strings.Contains(string(f.srv.Last().Raw), `!ls`) {
		t.Error("the !ls prompt itself reached the model")
	}
}

func TestDirectCommandCancelled(t *testing.T) {
	started := make(chan struct{})
	blockingBash := blocker(started)
	blockingBash.name = "bash"
	f := newFixture(t, options{box: box{blockingBash}}, llmtest.Reply("ok"))
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started
		cancel()
	}()
	if stop := runDirect(t, f.sess, ctx, "sleep 100"); stop != event.Cancelled {
		t.Fatalf("stop = %s", stop)
	}
	evs := f.rec.events()
	if got := kinds(evs); !strings.HasSuffix(got, "TurnEnd(cancelled)") {
		t.Errorf("events: %s", got)
	}
	res := only[event.ToolResult](evs)[0].Result
	if !res.IsError || !strings.Contains(res.Text, "cancelled") {
		t.Errorf("result = %+v", res)
	}
	f.prompt(t, t.Context(), "next")
	if got := conversation(f.srv.Last()); !strings.Contains(got, "$ sleep 100") {
		t.Errorf("request:\n%s", got)
	}
}

func TestDirectCommandWithoutBashTool(t *testing.T) {
	f := newFixture(t, options{noModel: true, box: box{echo()}})
	if stop := runDirect(t, f.sess, t.Context(), "ls"); stop != event.EndTurn {
		t.Fatalf("stop = %s", stop)
	}
	res := only[event.ToolResult](f.rec.events())[0].Result
	if !res.IsError || !strings.Contains(res.Text, "not available") {
		t.Errorf("result = %+v", res)
	}
}
