package agent_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
	"github.com/dsh-acp/dsh-acp/tools"
)

// linesTool prints n numbered lines of about 40 bytes, prefixed with its
// text argument.
func linesTool(n int) testTool {
	return testTool{name: "lines", run: func(_ context.Context, call tools.Call) event.Result {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "%s: line %03d of some command output\n", textArg(call), i)
		}
		b.WriteString("[exit code: 0]")
		return event.Result{Text: b.String()}
	}}
}

// isSummaryRequest reports whether r is a compaction's summary request.
func isSummaryRequest(r llmtest.Request) bool {
	return len(r.Messages) > 0 && strings.HasPrefix(r.Messages[0].Content, "You compact the history")
}

// conversationalModel answers like a model using the lines tool: a call
// after each user message, "ok" after each result, "SUMMARY n" to a
// summary request (or summary, when set). It counts the summary requests.
type conversationalModel struct {
	calls     atomic.Int64
	summaries atomic.Int64
	summary   func(n int64) llmtest.Response
}

func (m *conversationalModel) respond(r llmtest.Request) llmtest.Response {
	if isSummaryRequest(r) {
		n := m.summaries.Add(1)
		if m.summary != nil {
			return m.summary(n)
		}
		return llmtest.Reply(fmt.Sprintf("SUMMARY %d: the user ran the lines tool many times; all went well.", n))
	}
	last := r.Messages[len(r.Messages)-1]
	if last.Role == "tool" {
		return llmtest.Reply("ok")
	}
	id := fmt.Sprintf("c%d", m.calls.Add(1))
	return llmtest.Calls(llmtest.Call{ID: id, Name: "lines", Args: `{"text":"` + id + `"}`})
}

func newConversation(t *testing.T, window int, lines int, cfg agent.Config) (*fixture, *conversationalModel) {
	t.Helper()
	m := &conversationalModel{}
	if cfg.ContextWindow == nil {
		cfg.ContextWindow = func(string) int { return window }
	}
	f := newFixture(t, options{box: box{linesTool(lines)}, cfg: cfg})
	f.srv.Respond(m.respond)
	return f, m
}

func compactions(evs []event.Event) []event.Compaction { return only[event.Compaction](evs) }

func TestThresholdCompactionElidesOldOutputs(t *testing.T) {
	const window = 10_000
	f, m := newConversation(t, window, 60, agent.Config{})
	f.srv.SetContextWindow(window, llmtest.DeepSeekWording)
	for i := 1; i <= 14; i++ {
		if stop := f.prompt(t, t.Context(), fmt.Sprintf("turn %d", i)); stop != event.EndTurn {
			t.Fatalf("turn %d: %s\n%s", i, stop, kinds(f.rec.events()))
		}
	}
	for i, r := range f.srv.Requests() {
		if r.OverWindow {
			t.Errorf("request %d (%d tokens) passed the window", i, r.PromptTokens)
		}
	}
	cs := compactions(f.rec.events())
	if len(cs) == 0 {
		t.Fatalf("no compaction in %s", kinds(f.rec.events()))
	}
	c := cs[0]
	if c.Reason != event.CompactThreshold || c.Elided == 0 || c.Size != window || c.After >= c.Before ||
		c.Before <= window*8/10 || !strings.Contains(c.Note, "context compacted") || !strings.Contains(c.Note, "elided") {
		t.Errorf("compaction = %+v", c)
	}
	if n := m.summaries.Load(); n != 0 {
		t.Errorf("%d summary requests; elision should have been enough", n)
	}
	last := f.srv.Last()
	var whole, cut int
	for _, msg := range last.Messages {
		if msg.Role != "tool" {
			continue
		}
		if strings.Contains(msg.Content, "[… compacted: ") {
			cut++
			if !strings.HasPrefix(msg.Content, msg.ToolCallID+": line 001") || !strings.HasSuffix(msg.Content, "[exit code: 0]") {
				t.Errorf("an elided output lost its first or last lines: %q", msg.Content)
			}
		} else {
			whole++
		}
	}
	if cut == 0 || whole < 2 {
		t.Errorf("last request: %d outputs elided, %d whole (the newest two must stay whole)", cut, whole)
	}
}

func TestCompactionSummarizesAndRestoresExactly(t *testing.T) {
	const window = 3000
	f, m := newConversation(t, window, 40, agent.Config{})
	f.srv.SetContextWindow(window, llmtest.OpenAIWording)
	for i := 1; i <= 12; i++ {
		if stop := f.prompt(t, t.Context(), fmt.Sprintf("turn %d", i)); stop != event.EndTurn {
			t.Fatalf("turn %d: %s", i, stop)
		}
	}
	if m.summaries.Load() == 0 {
		t.Fatalf("no summary request; compactions: %+v", compactions(f.rec.events()))
	}
	var summary llmtest.Request
	for _, r := range f.srv.Requests() {
		if r.OverWindow {
			t.Errorf("a request passed the window: %d tokens", r.PromptTokens)
		}
		if isSummaryRequest(r) && summary.Messages == nil {
			summary = r
		}
	}
	if len(summary.Tools) != 0 || len(summary.Messages) != 2 || !strings.Contains(summary.Messages[1].Content, "[user]\nturn 1\n") {
		t.Errorf("summary request:\n%s", summary)
	}
	var summarized *event.Compaction
	for _, c := range compactions(f.rec.events()) {
		t.Logf("%s", strings.TrimSpace(c.Note))
		if c.SummaryBefore > 0 && summarized == nil {
			summarized = &c
		}
	}
	if summarized == nil || summarized.Turns == 0 || summarized.Dropped || !strings.HasPrefix(summarized.Summary, "SUMMARY 1") ||
		!strings.Contains(summarized.Note, "summarized") {
		t.Fatalf("summary compaction = %+v", summarized)
	}
	if first := f.srv.Last().Messages[1]; first.Role != "user" || !strings.HasPrefix(first.Content, "[Summary of the ") {
		t.Errorf("the request after a summary starts with %s: %q", first.Role, first.Content)
	}

	// The journal's events rebuild the same history: the next request of a
	// restored session is the live one's, byte for byte.
	evs := roundTrip(t, f.rec.events())
	g := newFixture(t, options{box: box{linesTool(40)}, cfg: agent.Config{ContextWindow: func(string) int { return window }}})
	g.srv.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Reply("ok") })
	f.srv.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Reply("ok") })
	g.sess.Restore(evs)
	g.prompt(t, t.Context(), "next")
	f.prompt(t, t.Context(), "next")
	live, again := f.srv.Last(), g.srv.Last()
	if string(live.Raw) != string(again.Raw) {
		t.Errorf("the restored session's request differs from the live one's:\nlive:\n%s\nrestored:\n%s", live, again)
	}
}

func TestCompactionDropsTurnsWhenTheSummaryFails(t *testing.T) {
	const window = 3000
	f, _ := newConversation(t, window, 40, agent.Config{})
	f.srv.SetContextWindow(window, llmtest.DeepSeekWording)
	m := &conversationalModel{summary: func(int64) llmtest.Response { return llmtest.Error(400, "summaries are not allowed") }}
	f.srv.Respond(m.respond)
	for i := 1; i <= 12; i++ {
		if stop := f.prompt(t, t.Context(), fmt.Sprintf("turn %d", i)); stop != event.EndTurn {
			t.Fatalf("turn %d: %s", i, stop)
		}
	}
	var dropped *event.Compaction
	for _, c := range compactions(f.rec.events()) {
		if c.Dropped {
			dropped = &c
			break
		}
	}
	if dropped == nil || dropped.Turns == 0 || dropped.SummaryError == "" || !strings.Contains(dropped.Note, "dropped") {
		t.Fatalf("no dropping compaction: %+v", compactions(f.rec.events()))
	}
	for _, r := range f.srv.Requests() {
		if r.OverWindow {
			t.Errorf("a request passed the window: %d tokens", r.PromptTokens)
		}
	}
	if first := f.srv.Last().Messages[1].Content; !strings.Contains(first, "earlier turns of this conversation were removed") {
		t.Errorf("the request after a drop starts with %q", first)
	}
}

func TestTooLongIsCompactedAndRetriedOnce(t *testing.T) {
	const provider = 3000
	// The agent believes in a much larger window than the provider has.
	f, _ := newConversation(t, 100_000, 40, agent.Config{})
	f.srv.SetContextWindow(provider, llmtest.DeepSeekWording)
	for i := 1; i <= 10; i++ {
		if stop := f.prompt(t, t.Context(), fmt.Sprintf("turn %d", i)); stop != event.EndTurn {
			t.Fatalf("turn %d: %s\n%s", i, stop, kinds(f.rec.events()))
		}
	}
	if errs := only[event.ErrorMessage](f.rec.events()); len(errs) != 0 {
		t.Errorf("the user saw errors: %v", errs)
	}
	cs := compactions(f.rec.events())
	if len(cs) == 0 || cs[0].Reason != event.CompactTooLong {
		t.Fatalf("compactions: %+v", cs)
	}
	c := cs[0]
	refused := 0
	for _, r := range f.srv.Requests() {
		if r.OverWindow {
			refused++
			if c.RequestTokens != r.PromptTokens {
				t.Errorf("compaction's RequestTokens = %d, the provider counted %d", c.RequestTokens, r.PromptTokens)
			}
		}
	}
	if refused != 1 || c.ProviderWindow != provider || c.Size != provider || !strings.Contains(c.Note, "the provider said") {
		t.Errorf("%d refused requests (want 1: the learned window drives later compactions); compaction %+v", refused, c)
	}
	if f.sess.Usage().Size != provider {
		t.Errorf("window after the provider named it: %d", f.sess.Usage().Size)
	}
}

func TestAnOversizedPromptDoesNotStickTheSession(t *testing.T) {
	const window = 2000
	f, _ := newConversation(t, window, 10, agent.Config{})
	f.srv.SetContextWindow(window, llmtest.DeepSeekWording)
	f.prompt(t, t.Context(), "turn 1")
	huge := strings.Repeat("paste of a very long log line\n", 400)
	if stop := f.prompt(t, t.Context(), huge); stop != event.EndTurn {
		t.Fatalf("stop = %s", stop)
	}
	errs := only[event.ErrorMessage](f.rec.events())
	if len(errs) != 1 || !strings.Contains(errs[0].Text, "Send a shorter prompt") {
		t.Fatalf("errors: %v", errs)
	}
	f.rec.reset()
	if stop := f.prompt(t, t.Context(), "small question"); stop != event.EndTurn {
		t.Fatalf("stop = %s", stop)
	}
	if errs := only[event.ErrorMessage](f.rec.events()); len(errs) != 0 {
		t.Errorf("the next prompt failed: %v", errs)
	}
	if cs := compactions(f.rec.events()); len(cs) != 1 || cs[0].SummaryBefore == 0 {
		t.Errorf("compactions of the next prompt: %+v", cs)
	}
	if last := f.srv.Last(); last.OverWindow || strings.Contains(last.String(), huge[:200]) {
		t.Errorf("the next request still carries the huge prompt (over window: %v)", last.OverWindow)
	}
}

func TestCompactCommand(t *testing.T) {
	f, _ := newConversation(t, 1_000_000, 60, agent.Config{})
	if stop := f.sess.Compact(t.Context(), "/compact"); stop != event.EndTurn {
		t.Fatalf("stop = %s", stop)
	}
	if got := kinds(f.rec.events()); got != "Command Info TurnEnd(end_turn)" {
		t.Errorf("empty session: %s", got)
	}
	if info := only[event.Info](f.rec.events()); len(info) != 1 || !strings.Contains(info[0].Text, "Nothing to compact") {
		t.Errorf("info: %v", info)
	}
	for i := 1; i <= 4; i++ {
		f.prompt(t, t.Context(), fmt.Sprintf("turn %d", i))
	}
	f.rec.reset()
	if stop := f.sess.Compact(t.Context(), "/compact"); stop != event.EndTurn {
		t.Fatalf("stop = %s", stop)
	}
	evs := f.rec.events()
	if got := kinds(evs); got != "Command Compaction TurnEnd(end_turn)" {
		t.Fatalf("events: %s", got)
	}
	c := compactions(evs)[0]
	if c.Reason != event.CompactCommand || c.Elided != 2 || c.SummaryBefore == 0 || c.Turns != 2 {
		t.Errorf("compaction %+v: want the two older of four outputs elided and the two older turns summarized", c)
	}
	u := only[event.Usage](evs)
	if len(u) != 1 || !u[0].Estimated || u[0].Used != c.After || u[0].Size != 1_000_000 {
		t.Errorf("usage after /compact: %+v", u)
	}
	if only[event.Command](evs)[0].Text != "/compact" {
		t.Errorf("command: %+v", only[event.Command](evs))
	}
	f.prompt(t, t.Context(), "after")
	for _, r := range f.srv.Requests() {
		if strings.Contains(r.String(), "/compact") {
			t.Errorf("the command reached the model:\n%s", r)
		}
	}
}

func TestCommandIsAnEventNeverSentToTheModel(t *testing.T) {
	f := newFixture(t, options{}, llmtest.Reply("ok"))
	ran := false
	stop := f.sess.Command(t.Context(), "/help", func(context.Context) string { ran = true; return "the commands are…" })
	if stop != event.EndTurn || !ran {
		t.Fatalf("stop %s ran %v", stop, ran)
	}
	if got := kinds(f.rec.events()); got != "Command Info TurnEnd(end_turn)" {
		t.Errorf("events: %s", got)
	}
	f.prompt(t, t.Context(), "hi")
	if got := conversation(f.srv.Last()); got != "user: \"hi\"\n" {
		t.Errorf("conversation:\n%s", got)
	}
}
