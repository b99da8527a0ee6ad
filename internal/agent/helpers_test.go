package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/llm"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
	"github.com/dsh-acp/dsh-acp/tools"
)

var (
	_ agent.ModelClient = (*llm.Client)(nil)
	_ agent.Toolbox     = (*tools.Registry)(nil)
)

const testKey = "sk-agent-test-secret-42"

// recorder is a Sink that keeps every event; hook, when set, sees each event
// first (on the emitting goroutine).
type recorder struct {
	mu   sync.Mutex
	evs  []event.Event
	hook func(event.Event)
}

func (r *recorder) Emit(e event.Event) {
	r.mu.Lock()
	r.evs = append(r.evs, e)
	hook := r.hook
	r.mu.Unlock()
	if hook != nil {
		hook(e)
	}
}

func (r *recorder) events() []event.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event.Event(nil), r.evs...)
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = nil
}

func (r *recorder) setHook(h func(event.Event)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hook = h
}

// kinds names the events' types, without the deltas, output and usage, for
// compact sequence assertions.
func kinds(evs []event.Event) string {
	var out []string
	for _, e := range evs {
		switch e := e.(type) {
		case event.TextDelta, event.ThoughtDelta, event.ToolOutput, event.Usage:
			continue
		case event.ToolCall:
			out = append(out, "ToolCall("+e.ID+")")
		case event.ToolResult:
			out = append(out, "ToolResult("+e.ID+")")
		case event.TurnEnd:
			out = append(out, "TurnEnd("+string(e.StopReason)+")")
		default:
			out = append(out, strings.TrimPrefix(fmt.Sprintf("%T", e), "event."))
		}
	}
	return strings.Join(out, " ")
}

func only[T event.Event](evs []event.Event) []T {
	var out []T
	for _, e := range evs {
		if v, ok := e.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

func result(t *testing.T, evs []event.Event, id string) event.Result {
	t.Helper()
	for _, r := range only[event.ToolResult](evs) {
		if r.ID == id {
			return r.Result
		}
	}
	t.Fatalf("no ToolResult for %s in %s", id, kinds(evs))
	return event.Result{}
}

// testTool is a tool whose Run is a function.
type testTool struct {
	name string
	run  func(ctx context.Context, call tools.Call) event.Result
}

func (t testTool) Name() string        { return t.name }
func (t testTool) Description() string { return "the " + t.name + " test tool" }
func (t testTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)
}
func (t testTool) Run(ctx context.Context, call tools.Call) event.Result { return t.run(ctx, call) }
func (t testTool) PresentCall(json.RawMessage) tools.CallIntent {
	return tools.CallIntent{Card: tools.CardGeneric, Title: t.name}
}
func (t testTool) PresentResult(json.RawMessage, event.Result) tools.ResultIntent {
	return tools.ResultIntent{Card: tools.CardGeneric}
}

func textArg(call tools.Call) string {
	var a struct {
		Text    string `json:"text"`
		Command string `json:"command"`
	}
	_ = json.Unmarshal(call.Args, &a)
	return a.Text + a.Command
}

// echo answers with its text argument.
func echo() testTool {
	return testTool{name: "echo", run: func(_ context.Context, call tools.Call) event.Result {
		return event.Result{Text: "echo: " + textArg(call)}
	}}
}

// streamer sends its output in pieces through Call.Output.
func streamer() testTool {
	return testTool{name: "stream", run: func(_ context.Context, call tools.Call) event.Result {
		for _, p := range []string{"one\n", "two\n"} {
			if call.Output != nil {
				call.Output(p)
			}
		}
		return event.Result{Text: "one\ntwo\n", CardOutput: "one\ntwo\n"}
	}}
}

// blocker runs until its context ends, after closing started.
func blocker(started chan<- struct{}) testTool {
	return testTool{name: "block", run: func(ctx context.Context, call tools.Call) event.Result {
		if call.Output != nil {
			call.Output("waiting\n")
		}
		close(started)
		<-ctx.Done()
		return event.Result{Text: "waiting\n[aborted]", IsError: true, CardOutput: "waiting\n"}
	}}
}

// fakeBash stands in for the bash tool of direct commands.
func fakeBash() testTool {
	return testTool{name: "bash", run: func(_ context.Context, call tools.Call) event.Result {
		out := "ran " + textArg(call) + "\n"
		if call.Output != nil {
			call.Output(out)
		}
		return event.Result{Text: out, CardOutput: out}
	}}
}

// box is a Toolbox over test tools.
type box []tools.Tool

func (b box) Lookup(name string) (tools.Tool, bool) {
	for _, t := range b {
		if t.Name() == name {
			return t, true
		}
	}
	return nil, false
}
func (b box) All() []tools.Tool                  { return b }
func (b box) PromptSection(tools.Session) string { return "TOOLS: check every [exit code: N]." }
func defaultBox(extra ...tools.Tool) box {
	return append(box{echo(), streamer(), fakeBash()}, extra...)
}

// fixture is a session wired to a fake provider.
type fixture struct {
	srv  *llmtest.Server
	rec  *recorder
	sess *agent.Session
}

type options struct {
	box      agent.Toolbox
	approver agent.Approver
	cfg      agent.Config
	noModel  bool
}

func newFixture(t *testing.T, o options, script ...llmtest.Response) *fixture {
	t.Helper()
	f := &fixture{srv: llmtest.New(t, script...), rec: &recorder{}}
	if o.box == nil {
		o.box = defaultBox()
	}
	var model agent.ModelClient
	if !o.noModel {
		model = llm.New(llm.Config{
			BaseURL: f.srv.URL(), APIKey: testKey, Model: "test-model", MaxRetries: 2,
			Backoff: func(int) time.Duration { return time.Millisecond },
			Sleep:   func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
		})
	}
	f.sess = agent.NewSession("sess-1", "/work/project", model, o.box, f.rec, o.approver, o.cfg)
	return f
}

func (f *fixture) prompt(t *testing.T, ctx context.Context, text string) event.StopReason {
	t.Helper()
	stop, err := f.sess.Prompt(ctx, text)
	if err != nil {
		t.Fatalf("Prompt: %v", err)
	}
	return stop
}

// conversation renders a request's messages after the system prompt.
func conversation(r llmtest.Request) string {
	r.Messages = r.Messages[1:]
	return r.String()
}

// roundTrip passes events through JSON, as the journal does.
func roundTrip(t *testing.T, evs []event.Event) []event.Event {
	t.Helper()
	out := make([]event.Event, len(evs))
	for i, e := range evs {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("marshal %T: %v", e, err)
		}
		p := reflect.New(reflect.TypeOf(e))
		if err := json.Unmarshal(b, p.Interface()); err != nil {
			t.Fatalf("unmarshal %T: %v", e, err)
		}
		out[i] = p.Elem().Interface().(event.Event)
	}
	return out
}

// approverFunc adapts a function to agent.Approver.
type approverFunc func(ctx context.Context, s tools.Session, call event.ToolCall) agent.Approval

func (f approverFunc) Approve(ctx context.Context, s tools.Session, call event.ToolCall) agent.Approval {
	return f(ctx, s, call)
}
