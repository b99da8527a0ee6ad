package agent_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/llm"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
	"github.com/dsh-acp/dsh-acp/tools"
)

func TestTextOnlyTurn(t *testing.T) {
	f := newFixture(t, options{}, llmtest.Reply("Hel", "lo"))
	if stop := f.prompt(t, t.Context(), "hi"); stop != event.EndTurn {
		t.Fatalf("stop = %s", stop)
	}
	want := []event.Event{
		event.UserPrompt{Text: "hi"},
		event.TextDelta{Text: "Hel"},
		event.TextDelta{Text: "lo"},
		event.AssistantMessage{Text: "Hello"},
		event.Usage{}, // checked below
		event.TurnEnd{StopReason: event.EndTurn},
	}
	got := f.rec.events()
	u, _ := got[min(4, len(got)-1)].(event.Usage)
	req := f.srv.Last()
	// The fake counts tokens as bytes/4 of the body; completion: "Hello".
	wantUsage := event.Usage{Model: "test-model", Used: req.PromptTokens + 2, Size: agent.DefaultContextWindow,
		Prompt: req.PromptTokens, Completion: 2, Known: true, RequestSize: u.RequestSize}
	if u != wantUsage || u.RequestSize < len(req.Messages[0].Content) {
		t.Errorf("usage = %+v, want %+v", u, wantUsage)
	}
	if len(got) == len(want) {
		got[4] = event.Usage{}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("events:\n%#v\nwant\n%#v", got, want)
	}
	sys := req.Messages[0]
	if sys.Role != "system" || !strings.Contains(sys.Content, "/work/project") ||
		!strings.HasSuffix(sys.Content, "/work/project.\n\nTOOLS: check every [exit code: N].") {
		t.Errorf("system prompt = %q", sys.Content)
	}
	if got := conversation(req); got != "user: \"hi\"\n" {
		t.Errorf("conversation:\n%s", got)
	}
	if names := req.ToolNames(); !reflect.DeepEqual(names, []string{"echo", "stream", "bash"}) {
		t.Errorf("tools = %v", names)
	}
	if string(req.Tools[0].Function.Parameters) != `{"type":"object","properties":{"text":{"type":"string"}}}` {
		t.Errorf("schema = %s", req.Tools[0].Function.Parameters)
	}
}

func TestCustomSystemPrompt(t *testing.T) {
	f := newFixture(t, options{cfg: agent.Config{SystemPrompt: "Be brief."}}, llmtest.Reply("ok"))
	f.prompt(t, t.Context(), "hi")
	if got := f.srv.Last().Messages[0].Content; got != "Be brief.\n\nTOOLS: check every [exit code: N]." {
		t.Errorf("system prompt = %q", got)
	}
}

func TestReasoningIsStreamedAndNotSentBack(t *testing.T) {
	f := newFixture(t, options{},
		llmtest.Stream(llmtest.Think("Let me "), llmtest.Think("see."), llmtest.Say("Four."), llmtest.Finish("stop")),
		llmtest.Reply("Five."))
	f.prompt(t, t.Context(), "2+2?")
	evs := f.rec.events()
	thoughts := only[event.ThoughtDelta](evs)
	if !reflect.DeepEqual(thoughts, []event.ThoughtDelta{{Text: "Let me "}, {Text: "see."}}) {
		t.Errorf("thoughts = %v", thoughts)
	}
	msg := only[event.AssistantMessage](evs)[0]
	if msg.Text != "Four." || msg.Reasoning != "Let me see." {
		t.Errorf("assistant message = %+v", msg)
	}
	f.prompt(t, t.Context(), "3+2?")
	req := f.srv.Last()
	if got := conversation(req); got != "user: \"2+2?\"\nassistant: \"Four.\"\nuser: \"3+2?\"\n" {
		t.Errorf("conversation:\n%s", got)
	}
	if strings.Contains(string(req.Raw), "reasoning_content") {
		t.Errorf("old reasoning sent back: %s", req.Raw)
	}
}

func TestToolCallsSplitAcrossChunks(t *testing.T) {
	for _, omit := range []bool{false, true} {
		t.Run(map[bool]string{false: "tool-call reasoning kept", true: "all reasoning omitted"}[omit], func(t *testing.T) {
			f := newFixture(t, options{cfg: agent.Config{OmitToolCallReasoning: omit}},
				llmtest.Stream(
					llmtest.Think("need two tools"),
					llmtest.Say("Checking."),
					llmtest.StartCall(0, "c1", "echo", `{"te`),
					llmtest.StartCall(1, "c2", "stream", ``),
					llmtest.Args(0, `xt": "hi"}`),
					llmtest.Args(1, `{}`),
					llmtest.Finish("tool_calls")),
				llmtest.Reply("All done."))
			if omit {
				f.srv.SetStrict(llmtest.StrictOff) // dropping the reasoning breaks DeepSeek's rules by design
			}
			if stop := f.prompt(t, t.Context(), "go"); stop != event.EndTurn {
				t.Fatalf("stop = %s", stop)
			}
			evs := f.rec.events()
			want := "UserPrompt AssistantMessage ToolCall(c1) ToolResult(c1) ToolCall(c2) ToolResult(c2) AssistantMessage TurnEnd(end_turn)"
			if got := kinds(evs); got != want {
				t.Fatalf("events:\n%s\nwant\n%s", got, want)
			}
			msg := only[event.AssistantMessage](evs)[0]
			wantCalls := []event.CallInfo{
				{ID: "c1", Name: "echo", Args: json.RawMessage(`{"text": "hi"}`)},
				{ID: "c2", Name: "stream", Args: json.RawMessage(`{}`)},
			}
			if !reflect.DeepEqual(msg.ToolCalls, wantCalls) || msg.Text != "Checking." {
				t.Errorf("assistant message = %+v", msg)
			}
			if r := result(t, evs, "c1"); r.Text != "echo: hi" || r.IsError {
				t.Errorf("c1 result = %+v", r)
			}
			outs := only[event.ToolOutput](evs)
			if !reflect.DeepEqual(outs, []event.ToolOutput{{ID: "c2", Data: "one\n"}, {ID: "c2", Data: "two\n"}}) {
				t.Errorf("outputs = %+v", outs)
			}
			reqs := f.srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("requests = %d", len(reqs))
			}
			reasoning := ` reasoning="need two tools"`
			if omit {
				reasoning = ""
			}
			wantConv := "user: \"go\"\n" +
				"assistant: \"Checking.\"" + reasoning + " call c1 echo({\"text\":\"hi\"}) call c2 stream({})\n" +
				"tool[c1]: \"echo: hi\"\n" +
				"tool[c2]: \"one\\ntwo\\n\"\n"
			if got := conversation(reqs[1]); got != wantConv {
				t.Errorf("second request:\n%s\nwant\n%s", got, wantConv)
			}
		})
	}
}

func TestMalformedToolCallsBecomeErrorResults(t *testing.T) {
	f := newFixture(t, options{},
		llmtest.Calls(
			llmtest.Call{ID: "c1", Name: "nope", Args: `{"text":"x"}`},
			llmtest.Call{ID: "c2", Name: "echo", Args: `{"text": "unterminated`},
			llmtest.Call{ID: "c3", Name: "echo", Args: `["not","an","object"]`},
		),
		llmtest.Reply("Sorry, fixing."))
	if stop := f.prompt(t, t.Context(), "go"); stop != event.EndTurn {
		t.Fatalf("stop = %s", stop)
	}
	evs := f.rec.events()
	tests := []struct {
		id, want string
	}{
		{"c1", `unknown tool "nope"; the tools you can call are: echo, stream, bash`},
		{"c2", `the arguments of this echo call are not a JSON object: {"text": "unterminated`},
		{"c3", `the arguments of this echo call are not a JSON object: ["not","an","object"]`},
	}
	for _, tt := range tests {
		r := result(t, evs, tt.id)
		if !r.IsError || !strings.Contains(r.Text, tt.want) {
			t.Errorf("%s result = %+v, want error containing %q", tt.id, r, tt.want)
		}
	}
	// The invalid arguments survive the journal as text.
	msg := roundTrip(t, evs)[1].(event.AssistantMessage)
	if got := string(msg.ToolCalls[1].Args); got != `"{\"text\": \"unterminated"` {
		t.Errorf("journaled args = %s", got)
	}
	conv := conversation(f.srv.Last())
	for _, want := range []string{
		`call c2 echo({"text": "unterminated)`,
		`tool[c1]: "unknown tool \"nope\"`,
		`tool[c2]: "the arguments of this echo call are not a JSON object`,
	} {
		if !strings.Contains(conv, want) {
			t.Errorf("second request lacks %q:\n%s", want, conv)
		}
	}
}

func TestStopReasons(t *testing.T) {
	tests := []struct {
		name   string
		script llmtest.Response
		want   event.StopReason
	}{
		{"stop", llmtest.Reply("fine"), event.EndTurn},
		{"length", llmtest.Stream(llmtest.Say("tru"), llmtest.Finish("length")), event.MaxTokens},
		{"length mid-call drops the call", llmtest.Stream(llmtest.StartCall(0, "c1", "echo", `{"te`), llmtest.Finish("length")), event.MaxTokens},
		{"content filter", llmtest.Stream(llmtest.Say("I can"), llmtest.Finish("content_filter")), event.Refusal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, options{}, tt.script, llmtest.Reply("next"))
			if stop := f.prompt(t, t.Context(), "go"); stop != tt.want {
				t.Fatalf("stop = %s, want %s", stop, tt.want)
			}
			if n := len(only[event.ToolCall](f.rec.events())); n != 0 {
				t.Errorf("%d calls ran after a cut-off response", n)
			}
			if stop := f.prompt(t, t.Context(), "again"); stop != event.EndTurn {
				t.Errorf("next prompt stop = %s", stop)
			}
		})
	}
}

func TestTurnLimit(t *testing.T) {
	call := func(id string) llmtest.Response {
		return llmtest.Calls(llmtest.Call{ID: id, Name: "echo", Args: `{"text":"` + id + `"}`})
	}
	f := newFixture(t, options{cfg: agent.Config{MaxTurnRequests: 2}}, call("c1"), call("c2"), llmtest.Reply("ok"))
	if stop := f.prompt(t, t.Context(), "loop"); stop != event.MaxTurnRequests {
		t.Fatalf("stop = %s", stop)
	}
	want := "UserPrompt AssistantMessage ToolCall(c1) ToolResult(c1) AssistantMessage ToolCall(c2) ToolResult(c2) TurnEnd(max_turn_requests)"
	if got := kinds(f.rec.events()); got != want {
		t.Errorf("events:\n%s\nwant\n%s", got, want)
	}
	if n := len(f.srv.Requests()); n != 2 {
		t.Errorf("requests = %d, want 2", n)
	}
	f.prompt(t, t.Context(), "continue")
	if got := conversation(f.srv.Last()); !strings.HasSuffix(got, "tool[c2]: \"echo: c2\"\nuser: \"continue\"\n") {
		t.Errorf("next request:\n%s", got)
	}
}

func TestDefaultTurnLimitIs50(t *testing.T) {
	script := make([]llmtest.Response, 50)
	for i := range script {
		script[i] = llmtest.Calls(llmtest.Call{ID: "c", Name: "echo", Args: `{}`})
	}
	f := newFixture(t, options{}, script...)
	if stop := f.prompt(t, t.Context(), "loop"); stop != event.MaxTurnRequests {
		t.Fatalf("stop = %s", stop)
	}
	if n := len(f.srv.Requests()); n != 50 {
		t.Errorf("requests = %d, want 50", n)
	}
}

func TestNoticesDeliveredOnce(t *testing.T) {
	var sess *agent.Session
	notifier := testTool{name: "notify", run: func(_ context.Context, call tools.Call) event.Result {
		sess.QueueNotice("NOTICE-B: task bash-2 completed")
		return event.Result{Text: "queued"}
	}}
	f := newFixture(t, options{box: defaultBox(notifier)},
		llmtest.Calls(llmtest.Call{ID: "c1", Name: "notify", Args: `{}`}),
		llmtest.Reply("noted"),
		llmtest.Reply("still here"))
	sess = f.sess
	f.sess.QueueNotice("NOTICE-A: task bash-1 completed")
	f.prompt(t, t.Context(), "hello")
	f.prompt(t, t.Context(), "again")

	evs := f.rec.events()
	want := "UserPrompt Notice AssistantMessage ToolCall(c1) ToolResult(c1) Notice AssistantMessage TurnEnd(end_turn) " +
		"UserPrompt AssistantMessage TurnEnd(end_turn)"
	if got := kinds(evs); got != want {
		t.Fatalf("events:\n%s\nwant\n%s", got, want)
	}
	reqs := f.srv.Requests()
	wantConv := []string{
		"user: \"NOTICE-A: task bash-1 completed\\n\\nhello\"\n",
		"user: \"NOTICE-A: task bash-1 completed\\n\\nhello\"\nassistant: \"\" call c1 notify({})\ntool[c1]: \"queued\"\n" +
			"user: \"NOTICE-B: task bash-2 completed\"\n",
		"user: \"NOTICE-A: task bash-1 completed\\n\\nhello\"\nassistant: \"\" call c1 notify({})\ntool[c1]: \"queued\"\n" +
			"user: \"NOTICE-B: task bash-2 completed\"\nassistant: \"noted\"\nuser: \"again\"\n",
	}
	for i, w := range wantConv {
		if got := conversation(reqs[i]); got != w {
			t.Errorf("request %d:\n%s\nwant\n%s", i, got, w)
		}
	}
}

func TestQueueNoticeConcurrently(t *testing.T) {
	f := newFixture(t, options{}, llmtest.Reply("a"), llmtest.Reply("b"))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { f.sess.QueueNotice("n" + string(rune('0'+i))) })
	}
	f.prompt(t, t.Context(), "one")
	wg.Wait()
	f.prompt(t, t.Context(), "two")
	if n := len(only[event.Notice](f.rec.events())); n != 8 {
		t.Errorf("notices delivered = %d, want 8", n)
	}
}

func TestApprover(t *testing.T) {
	calls := llmtest.Calls(
		llmtest.Call{ID: "c1", Name: "echo", Args: `{"text":"a"}`},
		llmtest.Call{ID: "c2", Name: "echo", Args: `{"text":"b"}`},
	)
	t.Run("deny", func(t *testing.T) {
		var seen []string
		deny := approverFunc(func(_ context.Context, s tools.Session, call event.ToolCall) agent.Approval {
			seen = append(seen, s.ID+"/"+call.ID)
			if call.ID == "c1" {
				return agent.Approval{Verdict: agent.Deny, Reason: "rejected by rule rm-*"}
			}
			return agent.Approval{Verdict: agent.Allow}
		})
		f := newFixture(t, options{approver: deny}, calls, llmtest.Reply("ok"))
		if stop := f.prompt(t, t.Context(), "go"); stop != event.EndTurn {
			t.Fatalf("stop = %s", stop)
		}
		evs := f.rec.events()
		if r := result(t, evs, "c1"); !r.IsError || r.Declined != "rejected by rule rm-*" || r.Text != "rejected by rule rm-*" {
			t.Errorf("denied result = %+v", r)
		}
		if r := result(t, evs, "c2"); r.Text != "echo: b" {
			t.Errorf("allowed result = %+v", r)
		}
		if !reflect.DeepEqual(seen, []string{"sess-1/c1", "sess-1/c2"}) {
			t.Errorf("approver saw %v", seen)
		}
	})
	t.Run("short reason for the user", func(t *testing.T) {
		deny := approverFunc(func(context.Context, tools.Session, event.ToolCall) agent.Approval {
			return agent.Approval{Verdict: agent.Deny, Reason: "Not run: a long instruction to the model.", UserReason: "declined by the user"}
		})
		f := newFixture(t, options{approver: deny}, calls, llmtest.Reply("ok"))
		f.prompt(t, t.Context(), "go")
		if r := result(t, f.rec.events(), "c1"); r.Text != "Not run: a long instruction to the model." || r.Declined != "declined by the user" {
			t.Errorf("denied result = %+v", r)
		}
	})
	t.Run("ask opens the card pending first", func(t *testing.T) {
		var f *fixture
		ask := approverFunc(func(context.Context, tools.Session, event.ToolCall) agent.Approval {
			return agent.Approval{Verdict: agent.Ask, Ask: func(context.Context) agent.Approval {
				// The card is open, pending, before the question is put.
				evs := f.rec.events()
				if c, ok := evs[len(evs)-1].(event.ToolCall); !ok || !c.Pending {
					t.Errorf("asked before a pending card opened: last event %#v", evs[len(evs)-1])
				}
				return agent.Approval{Verdict: agent.Allow, Decision: event.Decision{Verdict: event.VerdictAsk, Outcome: "allow_once"}}
			}}
		})
		f = newFixture(t, options{approver: ask}, calls, llmtest.Reply("ok"))
		f.prompt(t, t.Context(), "go")
		evs := f.rec.events()
		want := "UserPrompt AssistantMessage ToolCall(c1) Decision ToolResult(c1) ToolCall(c2) Decision ToolResult(c2) AssistantMessage TurnEnd(end_turn)"
		if got := kinds(evs); got != want {
			t.Errorf("events:\n%s\nwant\n%s", got, want)
		}
		if r := result(t, evs, "c2"); r.Text != "echo: b" {
			t.Errorf("allowed result = %+v", r)
		}
	})
	t.Run("cancel turn", func(t *testing.T) {
		cancelTurn := approverFunc(func(context.Context, tools.Session, event.ToolCall) agent.Approval {
			return agent.Approval{Verdict: agent.CancelTurn}
		})
		f := newFixture(t, options{approver: cancelTurn}, calls, llmtest.Reply("ok"))
		if stop := f.prompt(t, t.Context(), "go"); stop != event.Cancelled {
			t.Fatalf("stop = %s", stop)
		}
		evs := f.rec.events()
		want := "UserPrompt AssistantMessage ToolCall(c1) ToolResult(c1) ToolCall(c2) ToolResult(c2) TurnEnd(cancelled)"
		if got := kinds(evs); got != want {
			t.Errorf("events:\n%s\nwant\n%s", got, want)
		}
		for _, id := range []string{"c1", "c2"} {
			if r := result(t, evs, id); !r.IsError || !strings.Contains(r.Text, "cancelled") {
				t.Errorf("%s result = %+v", id, r)
			}
		}
		if stop := f.prompt(t, t.Context(), "next"); stop != event.EndTurn {
			t.Errorf("next prompt stop = %s", stop)
		}
	})
}

func TestToolPanicBecomesErrorResult(t *testing.T) {
	panicky := testTool{name: "panicky", run: func(context.Context, tools.Call) event.Result { panic("boom") }}
	f := newFixture(t, options{box: defaultBox(panicky)},
		llmtest.Calls(llmtest.Call{ID: "c1", Name: "panicky", Args: `{}`}), llmtest.Reply("ok"))
	if stop := f.prompt(t, t.Context(), "go"); stop != event.EndTurn {
		t.Fatalf("stop = %s", stop)
	}
	if r := result(t, f.rec.events(), "c1"); !r.IsError || !strings.Contains(r.Text, "internal error") {
		t.Errorf("result = %+v", r)
	}
}

func TestOneTurnAtATime(t *testing.T) {
	started := make(chan struct{})
	f := newFixture(t, options{box: defaultBox(blocker(started))},
		llmtest.Calls(llmtest.Call{ID: "c1", Name: "block", Args: `{}`}))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan event.StopReason)
	go func() {
		stop, _ := f.sess.Prompt(ctx, "first")
		done <- stop
	}()
	<-started
	// A second prompt whose context ends while the first turn runs gives up
	// without emitting anything.
	waitCtx, waitCancel := context.WithCancel(t.Context())
	waitCancel()
	if stop := f.prompt(t, waitCtx, "second"); stop != event.Cancelled {
		t.Errorf("waiting prompt stop = %s", stop)
	}
	cancel()
	if stop := <-done; stop != event.Cancelled {
		t.Errorf("first prompt stop = %s", stop)
	}
	if n := len(only[event.UserPrompt](f.rec.events())); n != 1 {
		t.Errorf("user prompts = %d, want 1", n)
	}
}

func TestTypedNilClientMeansNoModel(t *testing.T) {
	rec := &recorder{}
	var client *llm.Client
	s := agent.NewSession("s", "/", client, defaultBox(), rec, nil, agent.Config{})
	if stop, err := s.Prompt(t.Context(), "hi"); stop != event.EndTurn || err != nil {
		t.Fatalf("Prompt = %s, %v", stop, err)
	}
	if got := kinds(rec.events()); got != "UserPrompt ErrorMessage TurnEnd(end_turn)" {
		t.Errorf("events: %s", got)
	}
}
