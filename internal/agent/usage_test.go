package agent_test

import (
	"math"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

func TestUsageIsCountedAndPriced(t *testing.T) {
	price := &agent.Price{Input: 1, CachedInput: 0.1, Output: 2, Currency: "USD"}
	answer := llmtest.Stream(llmtest.Think("hmm"), llmtest.Say("done"), llmtest.Finish("stop"))
	answer.Usage = &llmtest.Usage{Prompt: 1000, Completion: 300, Cached: 400, Reasoning: 100}
	second := llmtest.Reply("again")
	second.Usage = &llmtest.Usage{Prompt: 2000, Completion: 10}
	f := newFixture(t, options{cfg: agent.Config{Price: price, ContextWindow: func(string) int { return 5000 }}}, answer, second)
	f.prompt(t, t.Context(), "one")
	f.prompt(t, t.Context(), "two")
	us := only[event.Usage](f.rec.events())
	if len(us) != 2 {
		t.Fatalf("usage events: %+v", us)
	}
	// The reasoning of an answer without tool calls is not sent back, so it
	// is not in context any more.
	first := (600*1 + 400*0.1 + 300*2) / 1e6
	if u := us[0]; u.Used != 1000+300-100 || u.Size != 5000 || !u.Known || u.Prompt != 1000 || u.Cached != 400 ||
		u.Reasoning != 100 || u.Currency != "USD" || math.Abs(u.Cost-first) > 1e-12 {
		t.Errorf("first usage %+v (cost want %g)", u, first)
	}
	total := first + (2000*1+10*2)/1e6
	if u := us[1]; u.Used != 2010 || math.Abs(u.Cost-total) > 1e-12 {
		t.Errorf("second usage %+v (cost want %g)", u, total)
	}
	r := f.sess.Usage()
	if r.Requests != 2 || r.Prompt != 3000 || r.Completion != 310 || r.Cached != 400 || r.Used != 2010 || !r.Known ||
		r.Size != 5000 || r.Threshold != 4000 || r.Model != "test-model" || math.Abs(r.Cost-total) > 1e-12 {
		t.Errorf("report %+v", r)
	}
}

func TestUsageNeverPassesTheWindow(t *testing.T) {
	answer := llmtest.Reply("x")
	answer.Usage = &llmtest.Usage{Prompt: 900, Completion: 300}
	f := newFixture(t, options{cfg: agent.Config{ContextWindow: func(string) int { return 1000 }}}, answer)
	f.prompt(t, t.Context(), "one")
	if u := only[event.Usage](f.rec.events()); len(u) != 1 || u[0].Used != 1000 {
		t.Errorf("usage %+v", u)
	}
}

func TestUsageUnknownIsEstimated(t *testing.T) {
	f := newFixture(t, options{}, llmtest.Reply("a"))
	f.srv.IgnoreUsage()
	f.prompt(t, t.Context(), "one")
	u := only[event.Usage](f.rec.events())
	if len(u) != 1 || u[0].Known || u[0].Used <= 0 || u[0].Used > u[0].Size {
		t.Errorf("usage %+v", u)
	}
}

func TestSetModelSwitchesTheRequestAndTheWindow(t *testing.T) {
	windows := map[string]int{"test-model": 8000, "big-model": 200_000}
	f := newFixture(t, options{cfg: agent.Config{ContextWindow: func(m string) int { return windows[m] }}},
		llmtest.Reply("a"), llmtest.Reply("b"))
	f.prompt(t, t.Context(), "one")
	if got := f.srv.Last().Model; got != "test-model" || f.sess.Model() != "test-model" || f.sess.Usage().Size != 8000 {
		t.Fatalf("model %q / %q, window %d", got, f.sess.Model(), f.sess.Usage().Size)
	}
	f.sess.SetModel("big-model")
	f.prompt(t, t.Context(), "two")
	if got := f.srv.Last().Model; got != "big-model" {
		t.Errorf("request model after SetModel: %q", got)
	}
	if u := only[event.Usage](f.rec.events()); u[len(u)-1].Size != 200_000 || u[len(u)-1].Model != "big-model" {
		t.Errorf("usage after the switch: %+v", u[len(u)-1])
	}
}

func TestPromptContentTheModelCannotReadIsTold(t *testing.T) {
	f := newFixture(t, options{}, llmtest.Reply("ok"))
	blocks := []agent.PromptBlock{
		{Type: "text", Text: "what is in "},
		{Type: "image"},
		{Type: "blob", URI: "file:///w/logo.png", Name: "logo.png"},
	}
	if _, err := f.sess.PromptBlocks(t.Context(), blocks); err != nil {
		t.Fatal(err)
	}
	if got := kinds(f.rec.events()); !strings.HasPrefix(got, "UserPrompt Info AssistantMessage") {
		t.Fatalf("events: %s", got)
	}
	info := only[event.Info](f.rec.events())[0].Text
	if !strings.Contains(info, "an image block") || !strings.Contains(info, "logo.png") {
		t.Errorf("info: %q", info)
	}
	want := "user: \"what is in [image content omitted: this agent reads text only][@logo.png](file:///w/logo.png) [binary content not attached: this agent reads text only]\"\n"
	if got := conversation(f.srv.Last()); got != want {
		t.Errorf("conversation:\n%s\nwant\n%s", got, want)
	}
	if n := len(agent.Unsent([]agent.PromptBlock{{Type: "text"}, {Type: "resource"}, {Type: "resource_link"}})); n != 0 {
		t.Errorf("text blocks counted as unsent: %d", n)
	}
}
