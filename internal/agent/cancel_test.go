package agent_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
	"github.com/dsh-acp/dsh-acp/tools"
)

func TestCancelDuringStreaming(t *testing.T) {
	tests := []struct {
		name     string
		chunks   []llmtest.Chunk
		cancelOn string // the last delta before the stall
		wantMsg  event.AssistantMessage
		wantConv string
	}{
		{
			name:     "after text",
			chunks:   []llmtest.Chunk{llmtest.Think("hmm"), llmtest.Say("Partial answ")},
			cancelOn: "Partial answ",
			wantMsg:  event.AssistantMessage{Text: "Partial answ", Reasoning: "hmm"},
			wantConv: "user: \"first\"\nassistant: \"Partial answ\"\nuser: \"second\"\n",
		},
		{
			name:     "mid tool call",
			chunks:   []llmtest.Chunk{llmtest.StartCall(0, "c1", "echo", `{"te`), llmtest.Say("Running")},
			cancelOn: "Running",
			wantMsg:  event.AssistantMessage{Text: "Running"},
			wantConv: "user: \"first\"\nassistant: \"Running\"\nuser: \"second\"\n",
		},
		{
			name:     "during reasoning",
			chunks:   []llmtest.Chunk{llmtest.Think("thinking")},
			cancelOn: "thinking",
			wantMsg:  event.AssistantMessage{Reasoning: "thinking"},
			wantConv: "user: \"first\\n\\nsecond\"\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, options{}, llmtest.Response{Chunks: tt.chunks, Stall: true}, llmtest.Reply("fresh"))
			ctx, cancel := context.WithCancel(t.Context())
			f.rec.setHook(func(e event.Event) {
				switch e := e.(type) {
				case event.TextDelta:
					if e.Text == tt.cancelOn {
						cancel()
					}
				case event.ThoughtDelta:
					if e.Text == tt.cancelOn {
						cancel()
					}
				}
			})
			if stop := f.prompt(t, ctx, "first"); stop != event.Cancelled {
				t.Fatalf("stop = %s", stop)
			}
			f.rec.setHook(nil)
			evs := f.rec.events()
			msgs := only[event.AssistantMessage](evs)
			if len(msgs) != 1 || !reflect.DeepEqual(msgs[0], tt.wantMsg) {
				t.Errorf("assistant messages = %+v, want %+v", msgs, tt.wantMsg)
			}
			if got, want := kinds(evs), "UserPrompt AssistantMessage TurnEnd(cancelled)"; got != want {
				t.Errorf("events: %s, want %s", got, want)
			}
			if stop := f.prompt(t, t.Context(), "second"); stop != event.EndTurn {
				t.Fatalf("next prompt stop = %s", stop)
			}
			if got := conversation(f.srv.Last()); got != tt.wantConv {
				t.Errorf("next request:\n%s\nwant\n%s", got, tt.wantConv)
			}
		})
	}
}

func TestCancelDuringToolRun(t *testing.T) {
	started := make(chan struct{})
	f := newFixture(t, options{box: defaultBox(blocker(started))},
		llmtest.Calls(
			llmtest.Call{ID: "c1", Name: "echo", Args: `{"text":"before"}`},
			llmtest.Call{ID: "c2", Name: "block", Args: `{}`},
			llmtest.Call{ID: "c3", Name: "echo", Args: `{"text":"after"}`},
		),
		llmtest.Reply("fresh start"))
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started
		cancel()
	}()
	if stop := f.prompt(t, ctx, "run them"); stop != event.Cancelled {
		t.Fatalf("stop = %s", stop)
	}
	evs := f.rec.events()
	want := "UserPrompt AssistantMessage ToolCall(c1) ToolResult(c1) ToolCall(c2) ToolResult(c2) ToolCall(c3) ToolResult(c3) TurnEnd(cancelled)"
	if got := kinds(evs); got != want {
		t.Fatalf("events:\n%s\nwant\n%s", got, want)
	}
	if r := result(t, evs, "c1"); r.IsError || r.Text != "echo: before" {
		t.Errorf("c1 = %+v", r)
	}
	r2 := result(t, evs, "c2")
	if !r2.IsError || r2.Text != "waiting\n[aborted]\n[cancelled: the user stopped the turn while this call ran]" ||
		r2.CardOutput != "waiting\n" {
		t.Errorf("c2 = %+v", r2)
	}
	if r := result(t, evs, "c3"); !r.IsError || r.Text != "cancelled: the user stopped the turn before this call ran" {
		t.Errorf("c3 = %+v", r)
	}
	if outs := only[event.ToolOutput](evs); len(outs) != 1 || outs[0] != (event.ToolOutput{ID: "c2", Data: "waiting\n"}) {
		t.Errorf("outputs = %+v", outs)
	}

	if stop := f.prompt(t, t.Context(), "next"); stop != event.EndTurn {
		t.Fatalf("next prompt stop = %s", stop)
	}
	wantConv := "user: \"run them\"\n" +
		"assistant: \"\" call c1 echo({\"text\":\"before\"}) call c2 block({}) call c3 echo({\"text\":\"after\"})\n" +
		"tool[c1]: \"echo: before\"\n" +
		"tool[c2]: \"waiting\\n[aborted]\\n[cancelled: the user stopped the turn while this call ran]\"\n" +
		"tool[c3]: \"cancelled: the user stopped the turn before this call ran\"\n" +
		"user: \"next\"\n"
	if got := conversation(f.srv.Last()); got != wantConv {
		t.Errorf("next request:\n%s\nwant\n%s", got, wantConv)
	}
}

func TestCancelWhileApproverWaits(t *testing.T) {
	asked := make(chan struct{})
	waiting := approverFunc(func(ctx context.Context, _ tools.Session, _ event.ToolCall) agent.Approval {
		close(asked)
		<-ctx.Done()
		return agent.Approval{Verdict: agent.Deny, Reason: "too late"}
	})
	f := newFixture(t, options{approver: waiting},
		llmtest.Calls(llmtest.Call{ID: "c1", Name: "echo", Args: `{}`}, llmtest.Call{ID: "c2", Name: "echo", Args: `{}`}))
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-asked
		cancel()
	}()
	if stop := f.prompt(t, ctx, "go"); stop != event.Cancelled {
		t.Fatalf("stop = %s", stop)
	}
	evs := f.rec.events()
	for _, id := range []string{"c1", "c2"} {
		if r := result(t, evs, id); !r.IsError || !strings.HasPrefix(r.Text, "cancelled") {
			t.Errorf("%s = %+v", id, r)
		}
	}
}

func TestEventsSurviveTheJournal(t *testing.T) {
	f := newFixture(t, options{},
		llmtest.Calls(llmtest.Call{ID: "c1", Name: "echo", Args: "{\n  \"text\": \"spaced\"\n}"}),
		llmtest.Reply("ok"))
	f.prompt(t, t.Context(), "go")
	for _, e := range f.rec.events() {
		if _, err := json.Marshal(e); err != nil {
			t.Errorf("%T does not encode: %v", e, err)
		}
	}
}
