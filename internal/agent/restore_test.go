package agent_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
	"github.com/dsh-acp/dsh-acp/replay"
	"github.com/dsh-acp/dsh-acp/tools"
)

// TestRestoreEquivalence runs a session through every kind of turn, then
// restores its journaled events into a fresh session: the next request of
// both must be byte for byte the same.
func TestRestoreEquivalence(t *testing.T) {
	started := make(chan struct{})
	var live *agent.Session
	notifier := testTool{name: "notify", run: func(context.Context, tools.Call) event.Result {
		live.QueueNotice("NOTICE-2: task bash-7 completed")
		return event.Result{Text: "queued"}
	}}
	tb := defaultBox(notifier, blocker(started))
	f := newFixture(t, options{box: tb},
		// p1: reasoning, text, five calls (spaced JSON, streamed output,
		// unknown tool, bad JSON, a notice queued mid-turn), then an answer.
		llmtest.Stream(
			llmtest.Think("plan"), llmtest.Say("Let me look."),
			llmtest.StartCall(0, "c1", "echo", `{ "text" : `), llmtest.Args(0, `"a" }`),
			llmtest.StartCall(1, "c2", "stream", `{}`),
			llmtest.StartCall(2, "c3", "nope", `{}`),
			llmtest.StartCall(3, "c4", "echo", `{"text": oops`),
			llmtest.StartCall(4, "c5", "notify", ``),
			llmtest.Finish("tool_calls")),
		llmtest.Stream(llmtest.Think("final thoughts"), llmtest.Say("Done."), llmtest.Finish("stop")),
		// p2: a provider error.
		llmtest.Error(401, "bad key"),
		// p3: cancelled while streaming.
		llmtest.Response{Chunks: []llmtest.Chunk{llmtest.Say("part")}, Stall: true},
		// p4: cancelled while a tool runs.
		llmtest.Calls(llmtest.Call{ID: "c6", Name: "block", Args: `{}`}, llmtest.Call{ID: "c7", Name: "echo", Args: `{}`}),
		// p5: cut off by max tokens.
		llmtest.Stream(llmtest.Say("long"), llmtest.Finish("length")),
		// the final question
		llmtest.Reply("final"))
	live = f.sess

	f.sess.QueueNotice("NOTICE-1: task bash-3 completed")
	f.prompt(t, t.Context(), "p1")
	runDirect(t, f.sess, t.Context(), "make test")
	f.prompt(t, t.Context(), "p2")

	ctx, cancel := context.WithCancel(t.Context())
	f.rec.setHook(func(e event.Event) {
		if d, ok := e.(event.TextDelta); ok && d.Text == "part" {
			cancel()
		}
	})
	if stop := f.prompt(t, ctx, "p3"); stop != event.Cancelled {
		t.Fatalf("p3 stop = %s", stop)
	}
	f.rec.setHook(nil)

	ctx, cancel = context.WithCancel(t.Context())
	go func() {
		<-started
		cancel()
	}()
	if stop := f.prompt(t, ctx, "p4"); stop != event.Cancelled {
		t.Fatalf("p4 stop = %s", stop)
	}
	if stop := f.prompt(t, t.Context(), "p5"); stop != event.MaxTokens {
		t.Fatalf("p5 stop = %s", stop)
	}

	journal := roundTrip(t, f.rec.events())
	if n := len(only[event.Notice](journal)); n != 2 {
		t.Fatalf("notices in the journal = %d, want 2", n)
	}

	g := newFixture(t, options{box: tb}, llmtest.Reply("final"))
	if made := g.sess.Restore(journal); len(made) != 0 {
		t.Errorf("Restore made up results for a clean journal: %+v", made)
	}
	f.prompt(t, t.Context(), "final question")
	g.prompt(t, t.Context(), "final question")

	liveReq, restoredReq := f.srv.Last(), g.srv.Last()
	if string(liveReq.Raw) != string(restoredReq.Raw) {
		t.Errorf("restored request differs:\nlive:\n%s\nrestored:\n%s", liveReq, restoredReq)
	}
	// Spot checks that the history holds what it should.
	conv := conversation(liveReq)
	for _, want := range []string{
		`user: "NOTICE-1: task bash-3 completed\n\np1"`,
		`reasoning="plan" call c1 echo({"text":"a"})`,
		`call c4 echo({"text": oops)`,
		`call c5 notify({})`,
		`user: "NOTICE-2: task bash-7 completed"`,
		`assistant: "Done."` + "\n",
		`$ make test`,
		`assistant: "part"`,
		`tool[c7]: "cancelled: the user stopped the turn before this call ran"`,
		`assistant: "long"`,
	} {
		if !strings.Contains(conv, want) {
			t.Errorf("history lacks %q:\n%s", want, conv)
		}
	}
	if strings.Contains(string(liveReq.Raw), "final thoughts") {
		t.Error("the reasoning of an answer was sent back")
	}
}

func TestRestoreClosesDanglingCalls(t *testing.T) {
	args := []byte(`{"command":"sleep 1000"}`)
	journal := []event.Event{
		event.UserPrompt{Text: "!ls"},
		event.ToolCall{ID: "user-1", Name: "bash", Args: []byte(`{"command":"ls"}`), Direct: true},
		// the daemon died; after a restart:
		event.UserPrompt{Text: "hi"},
		event.AssistantMessage{Text: "Running.", ToolCalls: []event.CallInfo{
			{ID: "c1", Name: "bash", Args: args}, {ID: "c2", Name: "bash", Args: args}}},
		event.ToolCall{ID: "c1", Name: "bash", Args: args},
		event.ToolOutput{ID: "c1", Data: "…"},
		// the daemon died again
	}
	f := newFixture(t, options{}, llmtest.Reply("ok"))
	made := f.sess.Restore(journal)
	// The settler's texts, the same a replay shows: c2 never started.
	wantText := map[string]string{"user-1": replay.InterruptedText, "c1": replay.InterruptedText, "c2": replay.NotStartedText}
	var ids []string
	for _, r := range made {
		if !r.Result.IsError || r.Result.Text != wantText[r.ID] {
			t.Errorf("made-up result = %+v", r)
		}
		ids = append(ids, r.ID)
	}
	if !reflect.DeepEqual(ids, []string{"user-1", "c1", "c2"}) {
		t.Errorf("made-up results for %v", ids)
	}
	f.prompt(t, t.Context(), "what happened?")
	want := "user: \"The user ran this command directly (not a call of yours):\\n$ ls\\n\\nIts result:\\n" +
		"interrupted: the daemon stopped while this command ran\\n\\nhi\"\n" +
		"assistant: \"Running.\" call c1 bash({\"command\":\"sleep 1000\"}) call c2 bash({\"command\":\"sleep 1000\"})\n" +
		"tool[c1]: \"interrupted: the daemon stopped while this command ran\"\n" +
		"tool[c2]: \"interrupted: the daemon stopped before this command ran\"\n" +
		"user: \"what happened?\"\n"
	if got := conversation(f.srv.Last()); got != want {
		t.Errorf("request:\n%s\nwant\n%s", got, want)
	}
}

func TestRestoreReplacesHistory(t *testing.T) {
	f := newFixture(t, options{}, llmtest.Reply("one"), llmtest.Reply("two"))
	f.prompt(t, t.Context(), "forget me")
	f.sess.Restore([]event.Event{event.UserPrompt{Text: "old"}, event.AssistantMessage{Text: "reply"},
		event.TurnEnd{StopReason: event.EndTurn}})
	f.prompt(t, t.Context(), "new")
	if got := conversation(f.srv.Last()); got != "user: \"old\"\nassistant: \"reply\"\nuser: \"new\"\n" {
		t.Errorf("request:\n%s", got)
	}
}
