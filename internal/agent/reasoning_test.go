package agent_test

import (
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

// The reasoning of every assistant message with tool calls — an empty one
// included — goes back verbatim in every later request: live, after the
// journal is restored into a fresh session, after /compact and a model
// switch. The fake enforces DeepSeek's rules for every model here and
// refuses reasoning other than it streamed; the restored session's request
// is the live one's, byte for byte.
func TestToolCallReasoningKeptThroughRestoreAndCompaction(t *testing.T) {
	script := []llmtest.Response{
		llmtest.Stream(llmtest.Think("first, echo"), llmtest.StartCall(0, "c1", "echo", `{"text":"a"}`), llmtest.Finish("tool_calls")),
		llmtest.Calls(llmtest.Call{ID: "c2", Name: "echo", Args: `{"text":"b"}`}),
		llmtest.Stream(llmtest.Think("both echoed"), llmtest.Say("Done."), llmtest.Finish("stop")),
		llmtest.Calls(llmtest.Call{ID: "c3", Name: "echo", Args: `{"text":"c"}`}),
		llmtest.Stream(llmtest.Think("  spaced\n\"quoted\"\t"), llmtest.StartCall(0, "c4", "echo", `{"text":"d"}`), llmtest.Finish("tool_calls")),
		llmtest.Reply("Again."),
	}
	f := newFixture(t, options{}, script...)
	f.srv.SetStrict(llmtest.StrictOn)
	f.prompt(t, t.Context(), "one")
	f.prompt(t, t.Context(), "two")
	journal := roundTrip(t, f.rec.events())

	g := newFixture(t, options{}, llmtest.Reply("live next"), llmtest.Reply("summary"), llmtest.Reply("after"))
	g.srv.SetStrict(llmtest.StrictOn)
	g.sess.Restore(journal)
	f.srv.Push(llmtest.Reply("live next"), llmtest.Reply("summary"), llmtest.Reply("after"))
	for _, s := range []*fixture{f, g} {
		s.prompt(t, t.Context(), "three")
		s.sess.Compact(t.Context(), "/compact")
		s.sess.SetModel("deepseek-v4-pro")
		s.prompt(t, t.Context(), "four")
	}

	want := map[string]string{"c1": "first, echo", "c2": "", "c3": "", "c4": "  spaced\n\"quoted\"\t"}
	for _, s := range []*fixture{f, g} {
		for i, r := range s.srv.Requests() {
			for _, m := range r.Messages {
				if len(m.ToolCalls) > 0 && (!m.HasReasoning || m.ReasoningContent != want[m.ToolCalls[0].ID]) {
					t.Errorf("request %d, call %s: reasoning %q (present %v), want %q",
						i+1, m.ToolCalls[0].ID, m.ReasoningContent, m.HasReasoning, want[m.ToolCalls[0].ID])
				}
			}
		}
	}
	live, restored := f.srv.Requests(), g.srv.Requests()
	for i := 1; i <= 3; i++ {
		l, r := live[len(live)-i], restored[len(restored)-i]
		if string(l.Raw) != string(r.Raw) {
			t.Errorf("request %d from the end differs:\nlive:\n%s\nrestored:\n%s", i, l, r)
		}
	}
	if last := restored[len(restored)-1]; last.Model != "deepseek-v4-pro" || last.String() == "" {
		t.Errorf("last request model %q", last.Model)
	}
}
