package agent_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/llm"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

// The session's thinking setting is what its requests ask for, from the
// next request on; the provider's default ("") sends nothing.
func TestSessionThinkingReachesTheRequest(t *testing.T) {
	f := newFixture(t, options{}, llmtest.Reply("a"), llmtest.Reply("b"), llmtest.Reply("c"))
	f.prompt(t, t.Context(), "default")
	f.sess.SetThinking(llm.ThinkingOff)
	if got := f.sess.Thinking(); got != llm.ThinkingOff {
		t.Fatalf("Thinking() = %q", got)
	}
	f.prompt(t, t.Context(), "off")
	f.sess.SetThinking(llm.ThinkingMax)
	f.prompt(t, t.Context(), "max")
	reqs := f.srv.Requests()
	if r := reqs[0]; r.Thinking != nil || r.ReasoningEffort != nil {
		t.Errorf("default sent thinking %+v, effort %v", r.Thinking, r.ReasoningEffort)
	}
	if r := reqs[1]; r.Thinking == nil || r.Thinking.Type != "disabled" {
		t.Errorf("off sent thinking %+v", r.Thinking)
	}
	if r := reqs[2]; r.Thinking == nil || r.Thinking.Type != "enabled" || r.ReasoningEffort == nil || *r.ReasoningEffort != "max" {
		t.Errorf("max sent thinking %+v, effort %v", r.Thinking, r.ReasoningEffort)
	}
}

// A provider that refuses the setting: the turn goes on without it and the
// user is told once, in plain words.
func TestThinkingRefusalToldOnce(t *testing.T) {
	f := newFixture(t, options{},
		llmtest.Error(http.StatusBadRequest, "Unrecognized request argument supplied: thinking"),
		llmtest.Reply("one"), llmtest.Reply("two"))
	f.sess.SetThinking(llm.ThinkingHigh)
	f.prompt(t, t.Context(), "first")
	f.prompt(t, t.Context(), "second")
	var told []string
	for _, e := range only[event.ErrorMessage](f.rec.events()) {
		if strings.Contains(e.Text, "does not take the thinking setting") {
			told = append(told, e.Text)
		}
	}
	if len(told) != 1 {
		t.Errorf("told %d times: %q", len(told), told)
	}
	msgs := only[event.AssistantMessage](f.rec.events())
	if len(msgs) != 2 || msgs[0].Text != "one" || msgs[1].Text != "two" {
		t.Errorf("answers %+v", msgs)
	}
}
