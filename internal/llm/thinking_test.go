package llm_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/llm"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

func deepseekClient(srv *llmtest.Server, thinking llm.Thinking) *llm.Client {
	return llm.New(llm.Config{BaseURL: srv.URL(), APIKey: testKey, Model: "deepseek-flash", MaxRetries: -1, Thinking: thinking})
}

// A tool call with reasoning, one without, and a later turn: the strict
// fake (DeepSeek's rules) takes every request, and the reasoning comes back
// exactly as it streamed — the empty one as an empty string. Before the
// client encoded its own body, go-openai's omitempty dropped the empty one
// and the third request was refused.
func TestReasoningPassedBackUnderDeepSeekRules(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.Stream(llmtest.Think("I will list."), llmtest.StartCall(0, "c1", "bash", `{"command":"ls"}`), llmtest.Finish("tool_calls")),
		llmtest.Calls(llmtest.Call{ID: "c2", Name: "bash", Args: `{"command":"cat a"}`}),
		llmtest.Stream(llmtest.Think("All read."), llmtest.Say("Done."), llmtest.Finish("stop")),
		llmtest.Reply("Again."))
	c := deepseekClient(srv, llm.ThinkingDefault)
	msgs := []llm.Message{{Role: llm.RoleUser, Content: "look"}}
	ask := func() llm.Response {
		t.Helper()
		resp, err := c.Stream(t.Context(), llm.Request{Messages: msgs}, nil)
		if err != nil {
			t.Fatalf("request %d: %v", len(srv.Requests()), err)
		}
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: resp.Text, Reasoning: resp.Reasoning, ToolCalls: resp.ToolCalls})
		for _, tc := range resp.ToolCalls {
			msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Content: "out"})
		}
		return resp
	}
	ask()
	ask()
	ask()
	msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: "again"})
	ask()
	if r := srv.Refusals(); len(r) != 0 {
		t.Fatalf("refused: %v", r[0].Refused)
	}
	last := srv.Last()
	want := map[string]string{"c1": "I will list.", "c2": ""}
	for _, m := range last.Messages {
		if len(m.ToolCalls) == 0 {
			continue
		}
		id := m.ToolCalls[0].ID
		if !m.HasReasoning || m.ReasoningContent != want[id] {
			t.Errorf("call %s: reasoning_content %q (present %v), want %q", id, m.ReasoningContent, m.HasReasoning, want[id])
		}
		delete(want, id)
	}
	if len(want) != 0 {
		t.Errorf("calls missing from the last request: %v\n%s", want, last)
	}
}

func TestThinkingParameters(t *testing.T) {
	effort := func(r llmtest.Request) string {
		if r.ReasoningEffort == nil {
			return "-"
		}
		return *r.ReasoningEffort
	}
	typ := func(r llmtest.Request) string {
		if r.Thinking == nil {
			return "-"
		}
		return r.Thinking.Type
	}
	for _, tt := range []struct {
		client, request llm.Thinking
		typ, effort     string
	}{
		{"", "", "-", "-"},
		{"", llm.ThinkingOff, "disabled", "-"},
		{"", llm.ThinkingLow, "enabled", "low"},
		{"", llm.ThinkingHigh, "enabled", "high"},
		{llm.ThinkingOff, llm.ThinkingMax, "enabled", "max"},
		{llm.ThinkingMax, "", "enabled", "max"},
	} {
		srv := llmtest.New(t, llmtest.Reply("ok"))
		req := simpleRequest()
		req.Thinking = tt.request
		if _, err := deepseekClient(srv, tt.client).Stream(t.Context(), req, nil); err != nil {
			t.Fatal(err)
		}
		r := srv.Last()
		if typ(r) != tt.typ || effort(r) != tt.effort || r.ToolChoice != nil {
			t.Errorf("client %q request %q: thinking %s, effort %s, tool_choice %s; want %s, %s, none",
				tt.client, tt.request, typ(r), effort(r), r.ToolChoice, tt.typ, tt.effort)
		}
	}
}

// A provider that refuses the thinking parameters: the request is sent
// again without them, the response says so once, and later requests to
// that model leave them out; another model still gets them.
func TestThinkingRefusedIsDroppedOnce(t *testing.T) {
	for _, refusal := range []llmtest.Response{
		llmtest.Error(http.StatusBadRequest, "Unrecognized request argument supplied: thinking"),
		llmtest.Error(http.StatusBadRequest, "Unsupported parameter: 'reasoning_effort' is not supported with this model."),
		{Status: http.StatusUnprocessableEntity, Body: `{"error":{"message":"extra inputs are not permitted","param":"thinking"}}`},
	} {
		srv := llmtest.New(t, refusal, llmtest.Reply("one"), llmtest.Reply("two"), llmtest.Reply("other"))
		c := deepseekClient(srv, llm.ThinkingMax)
		resp, err := c.Stream(t.Context(), simpleRequest(), nil)
		if err != nil || resp.Text != "one" {
			t.Fatalf("first: %q, %v", resp.Text, err)
		}
		if !errors.Is(resp.ThinkingRefused, llm.ErrThinkingRefused) || !c.ThinkingRefused("") {
			t.Fatalf("ThinkingRefused = %v, client says %v", resp.ThinkingRefused, c.ThinkingRefused(""))
		}
		if a := llm.Advice(resp.ThinkingRefused); a != `The model provider does not take the thinking setting for the model "deepseek-flash", so it is no longer sent: the provider's default applies.` {
			t.Errorf("advice %q", a)
		}
		resp, err = c.Stream(t.Context(), simpleRequest(), nil)
		if err != nil || resp.ThinkingRefused != nil {
			t.Fatalf("second: %v, refused again: %v", err, resp.ThinkingRefused)
		}
		other := simpleRequest()
		other.Model = "deepseek-v4-pro"
		if _, err := c.Stream(t.Context(), other, nil); err != nil {
			t.Fatal(err)
		}
		reqs := srv.Requests()
		sent := [4]bool{reqs[0].Thinking != nil, reqs[1].Thinking != nil, reqs[2].Thinking != nil, reqs[3].Thinking != nil}
		if sent != [4]bool{true, false, false, true} {
			t.Errorf("thinking sent per request: %v, want true false false true", sent)
		}
	}
}

// DeepSeek's own thinking-mode rules mention thinking but are not a refusal
// of the parameters: they are returned as they are, and nothing is dropped.
func TestThinkingModeRuleIsNotARefusal(t *testing.T) {
	for _, msg := range []string{llmtest.MissingReasoningMessage, llmtest.ToolChoiceMessage} {
		srv := llmtest.New(t, llmtest.Error(http.StatusBadRequest, msg))
		c := deepseekClient(srv, llm.ThinkingHigh)
		_, err := c.Stream(context.Background(), simpleRequest(), nil)
		if !errors.Is(err, llm.ErrRequest) || errors.Is(err, llm.ErrThinkingRefused) || c.ThinkingRefused("") {
			t.Errorf("%q: err %v, refused %v", msg, err, c.ThinkingRefused(""))
		}
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("%q: %d requests, want 1", msg, n)
		}
	}
}

func TestParseThinking(t *testing.T) {
	for in, want := range map[string]llm.Thinking{
		"": llm.ThinkingDefault, " Default ": llm.ThinkingDefault, "auto": llm.ThinkingDefault,
		"off": llm.ThinkingOff, "NONE": llm.ThinkingOff, "disabled": llm.ThinkingOff,
		"low": llm.ThinkingLow, "High": llm.ThinkingHigh, "max": llm.ThinkingMax,
	} {
		if got, err := llm.ParseThinking(in); err != nil || got != want {
			t.Errorf("ParseThinking(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"medium", "xhigh", "on", "1"} {
		if _, err := llm.ParseThinking(bad); err == nil {
			t.Errorf("ParseThinking(%q) accepted", bad)
		}
	}
	for _, l := range llm.ThinkingLevels() {
		if back, err := llm.ParseThinking(l.String()); err != nil || back != l || l.Label() == "" {
			t.Errorf("%q does not round trip (%q, %v) or has no label", l, back, err)
		}
	}
}

// Whatever ParseThinking accepts is one of the offered levels, and what it
// refuses it names.
func FuzzParseThinking(f *testing.F) {
	for _, s := range []string{"", "off", "max", " HIGH ", "medium", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := llm.ParseThinking(s)
		if err != nil {
			return
		}
		for _, l := range llm.ThinkingLevels() {
			if l == got {
				return
			}
		}
		t.Fatalf("ParseThinking(%q) = %q, not an offered level", s, got)
	})
}
