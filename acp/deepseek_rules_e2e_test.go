package acp_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

// deepseekScript answers the chat requests of TestE2EDeepSeekThinkingRules
// in order, and every compaction summary request with a summary.
type deepseekScript struct {
	mu        sync.Mutex
	next      []llmtest.Response
	summaries int
}

func (s *deepseekScript) respond(r llmtest.Request) llmtest.Response {
	s.mu.Lock()
	defer s.mu.Unlock()
	if isSummary(r) {
		s.summaries++
		return llmtest.Reply("Summary: the user had commands run; each printed its word.")
	}
	if len(s.next) == 0 {
		return llmtest.Status(500)
	}
	resp := s.next[0]
	s.next = s.next[1:]
	return resp
}

// deepseekCall is a streamed answer making one bash call, with reasoning
// (none when it is "").
func deepseekCall(reasoning, id, command string) llmtest.Response {
	var chunks []llmtest.Chunk
	if reasoning != "" {
		half := len(reasoning) / 2
		chunks = append(chunks, llmtest.Think(reasoning[:half]), llmtest.Think(reasoning[half:]))
	}
	args, _ := json.Marshal(map[string]string{"command": command, "description": "Say a word"})
	return llmtest.Stream(append(chunks, llmtest.StartCall(0, id, "bash", string(args)), llmtest.Finish("tool_calls"))...)
}

// DeepSeek's thinking-mode rules hold in every request of a session that
// lives through all that can lose reasoning: a tool call with reasoning and
// one without, two more turns, a daemon restart and session/load, /compact,
// and a /model switch. The fake enforces DeepSeek's rules (it is strict for
// deepseek-… models) and refuses reasoning sent back other than streamed:
// no request is refused, and every tool-call message of every request
// carries the reasoning streamed with it, the empty one as "". On the
// client that encoded requests with go-openai, the empty reasoning was
// dropped and the turn's third request was refused (HTTP 400).
func TestE2EDeepSeekThinkingRules(t *testing.T) {
	tricky := "Quotes \"x\", tags <b>&</b>, ünïcödé, a tab\tand\nnew lines\n  kept verbatim. "
	script := &deepseekScript{next: []llmtest.Response{
		// Turn 1: a call with reasoning, a call without, an answer.
		deepseekCall("I will run echo one. ", "call_a", "echo one"),
		deepseekCall("", "call_b", "echo two"),
		llmtest.Stream(llmtest.Think("Both ran."), llmtest.Say("Both ran."), llmtest.Finish("stop")),
		// Turn 2: a call whose reasoning needs escaping, an answer.
		deepseekCall(tricky, "call_c", "echo three"),
		llmtest.Reply("Three."),
		// Turn 3: an answer.
		llmtest.Stream(llmtest.Think("Nothing to run."), llmtest.Say("Fine."), llmtest.Finish("stop")),
		// Turn 4, after the restart: a call without reasoning, one with.
		deepseekCall("", "call_d", "echo four"),
		deepseekCall("Now five.", "call_e", "echo five"),
		llmtest.Reply("Four and five."),
		// Turn 5, after /compact and /model.
		llmtest.Reply("Done."),
	}}
	srv := llmtest.New(t)
	srv.SetModels("deepseek-flash", "deepseek-v4-pro")
	srv.Respond(script.respond)
	args := []string{"--mode", "auto"}
	env := []string{"DSH_BASE_URL=" + srv.URL(), "DSH_API_KEY=" + llmNewKey(), "DSH_MODEL=deepseek-flash"}
	cwd := t.TempDir()
	d1 := startDaemon(t, acptest.ZedCapabilities(), args, env...)
	sid := d1.newSession(cwd)
	for _, p := range []string{"run echo one and two", "run echo three", "anything else?"} {
		if stop := d1.prompt(sid, p); stop != "end_turn" {
			t.Fatalf("prompt %q: %s", p, stop)
		}
	}
	live := len(srv.Requests())
	llmCheckExit(t, d1)

	d2 := startDaemonIn(t, d1.stateDir, acptest.ZedCapabilities(), args, env...)
	t.Cleanup(func() { llmCheckExit(t, d2) })
	if _, err := d2.loadSession(sid, cwd); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"run echo four and five", "/compact", "/model deepseek-v4-pro", "and now?"} {
		if stop := d2.prompt(sid, p); stop != "end_turn" {
			t.Fatalf("prompt %q: %s", p, stop)
		}
	}

	reqs := srv.Requests()
	if r := srv.Refusals(); len(r) > 0 {
		t.Fatalf("%d requests refused; the first: %s\n%s", len(r), r[0].Refused, r[0])
	}
	if len(script.next) != 0 || script.summaries != 1 || len(reqs) != 11 {
		t.Fatalf("%d requests, %d summaries, %d answers left: the session did not run as scripted", len(reqs), script.summaries, len(script.next))
	}
	streamed := srv.StreamedReasoning()
	want := map[string]string{"call_a": "I will run echo one. ", "call_b": "", "call_c": tricky, "call_d": "", "call_e": "Now five."}
	for id, r := range want {
		if got := streamed[id]; len(got) != 1 || got[0] != r {
			t.Fatalf("the fake streamed %q with %s, want %q", got, id, r)
		}
	}
	for i, r := range reqs {
		for _, m := range r.Messages {
			if len(m.ToolCalls) == 0 {
				continue
			}
			id := m.ToolCalls[0].ID
			if !m.HasReasoning || m.ReasoningContent != want[id] {
				t.Errorf("request %d, call %s: reasoning_content %q (present %v), want %q",
					i+1, id, m.ReasoningContent, m.HasReasoning, want[id])
			}
		}
	}
	// The first request after the restart sends back every call the live
	// session made, and the last one (another model, after /compact)
	// still carries the calls the compaction kept.
	restored, last := reqs[live], reqs[len(reqs)-1]
	for _, id := range []string{"call_a", "call_b", "call_c"} {
		if !strings.Contains(restored.String(), "call "+id+" ") {
			t.Errorf("the first request after session/load lacks %s:\n%s", id, restored)
		}
	}
	if last.Model != "deepseek-v4-pro" || !strings.Contains(last.String(), "call call_d ") || !strings.Contains(last.String(), "call call_e ") {
		t.Errorf("the request after /compact and /model (model %s) lacks the kept calls:\n%s", last.Model, last)
	}
}
