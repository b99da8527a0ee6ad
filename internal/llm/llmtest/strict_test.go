package llmtest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

// failures is a testing.TB that records Errorf instead of failing.
type failures struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (f *failures) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

func (f *failures) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.errs)
}

// post sends body to the server's chat endpoint; it returns the status and
// the response body.
func post(t *testing.T, srv *llmtest.Server, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// chat is a request body for model with the given messages and extra
// top-level fields.
func chat(model, messages, extra string) string {
	return `{"model":"` + model + `","stream":true,"messages":[{"role":"user","content":"hi"}` + messages + `]` + extra + `}`
}

const (
	callNoReasoning    = `,{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"x"}`
	callEmptyReasoning = `,{"role":"assistant","reasoning_content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"x"}`
	callNullReasoning  = `,{"role":"assistant","reasoning_content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"x"}`
	answerNoReasoning  = `,{"role":"assistant","content":"plain answer"},{"role":"user","content":"more"}`
)

func TestStrictRules(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		strict     llmtest.Strictness
		status     int
		message    string // a prefix of the refusal's message
	}{
		{"missing reasoning", chat("deepseek-flash", callNoReasoning, ""), llmtest.StrictAuto, 400, llmtest.MissingReasoningMessage},
		{"null reasoning", chat("deepseek-v4-pro", callNullReasoning, ""), llmtest.StrictAuto, 400, llmtest.MissingReasoningMessage},
		{"empty reasoning is enough", chat("deepseek-flash", callEmptyReasoning, ""), llmtest.StrictAuto, 200, ""},
		{"answers need none", chat("deepseek-flash", answerNoReasoning, ""), llmtest.StrictAuto, 200, ""},
		{"thinking disabled", chat("deepseek-flash", callNoReasoning, `,"thinking":{"type":"disabled"}`), llmtest.StrictAuto, 200, ""},
		{"legacy chat model", chat("deepseek-chat", callNoReasoning, ""), llmtest.StrictAuto, 200, ""},
		{"legacy chat model thinking", chat("deepseek-chat", callNoReasoning, `,"thinking":{"type":"enabled"}`), llmtest.StrictAuto, 400, llmtest.MissingReasoningMessage},
		{"other model", chat("gpt-x", callNoReasoning, ""), llmtest.StrictAuto, 200, ""},
		{"other model, strict on", chat("gpt-x", callNoReasoning, ""), llmtest.StrictOn, 400, llmtest.MissingReasoningMessage},
		{"strict off", chat("deepseek-flash", callNoReasoning, ""), llmtest.StrictOff, 200, ""},
		{"tool_choice required", chat("deepseek-flash", "", `,"tool_choice":"required"`), llmtest.StrictAuto, 400, llmtest.ToolChoiceMessage},
		{"tool_choice named", chat("deepseek-flash", "", `,"tool_choice":{"type":"function","function":{"name":"bash"}}`), llmtest.StrictAuto, 400, llmtest.ToolChoiceMessage},
		{"tool_choice auto", chat("deepseek-flash", "", `,"tool_choice":"auto"`), llmtest.StrictAuto, 200, ""},
		{"tool_choice without thinking", chat("deepseek-flash", "", `,"tool_choice":"required","thinking":{"type":"disabled"}`), llmtest.StrictAuto, 200, ""},
		{"bad thinking type", chat("deepseek-flash", "", `,"thinking":{"type":"on"}`), llmtest.StrictAuto, 422, "Invalid thinking.type"},
		{"bad effort", chat("deepseek-flash", "", `,"reasoning_effort":"huge"`), llmtest.StrictAuto, 422, "Invalid reasoning_effort"},
		{"mapped effort", chat("deepseek-flash", "", `,"thinking":{"type":"enabled"},"reasoning_effort":"xhigh"`), llmtest.StrictAuto, 200, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := &failures{TB: t}
			srv := llmtest.New(rec, llmtest.Reply("ok"))
			srv.SetStrict(tt.strict)
			status, body := post(t, srv, tt.body)
			if status != tt.status {
				t.Fatalf("status %d, want %d: %s", status, tt.status, body)
			}
			if tt.status == 200 {
				if srv.Remaining() != 0 || rec.count() != 0 || len(srv.Refusals()) != 0 {
					t.Fatalf("accepted request not served from the script, or a failure recorded: %v", rec.errs)
				}
				return
			}
			var e struct {
				Error struct {
					Message, Type, Code string
					Param               any
				}
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(e.Error.Message, tt.message) || e.Error.Type != "invalid_request_error" || e.Error.Code != "invalid_request_error" {
				t.Errorf("error %+v, want message %q as invalid_request_error", e.Error, tt.message)
			}
			if srv.Remaining() != 1 {
				t.Errorf("a refused request consumed the script")
			}
			if r := srv.Refusals(); len(r) != 1 || r[0].Refused != e.Error.Message {
				t.Errorf("refusals %+v", r)
			}
			if rec.count() != 1 {
				t.Errorf("the refusal did not fail the test once: %v", rec.errs)
			}
		})
	}
}

// The fake knows what it streamed: reasoning sent back other than it was
// streamed with the same calls is refused (DeepSeek cannot tell; the fake
// keeps tests honest), and an answer with no calls sets no expectation.
func TestStrictReasoningVerbatim(t *testing.T) {
	rec := &failures{TB: t}
	srv := llmtest.New(rec,
		llmtest.Stream(llmtest.Think("Let me "), llmtest.Think("look."), llmtest.StartCall(0, "c1", "bash", "{}"), llmtest.Finish("tool_calls")),
		llmtest.Reply("done"), llmtest.Reply("done again"))
	srv.ExpectRefusals()
	if status, body := post(t, srv, chat("deepseek-flash", "", "")); status != 200 {
		t.Fatalf("first: %d %s", status, body)
	}
	if got := srv.StreamedReasoning()["c1"]; len(got) != 1 || got[0] != "Let me look." {
		t.Fatalf("streamed %q", got)
	}
	altered := strings.Replace(callEmptyReasoning, `"reasoning_content":""`, `"reasoning_content":"Let me look. "`, 1)
	status, body := post(t, srv, chat("deepseek-flash", altered, ""))
	if status != 400 || !strings.Contains(body, "differs from what was streamed") {
		t.Fatalf("altered reasoning: %d %s", status, body)
	}
	exact := strings.Replace(callEmptyReasoning, `"reasoning_content":""`, `"reasoning_content":"Let me look."`, 1)
	if status, body := post(t, srv, chat("deepseek-flash", exact, "")); status != 200 {
		t.Fatalf("verbatim reasoning: %d %s", status, body)
	}
	if rec.count() != 0 {
		t.Errorf("ExpectRefusals still failed the test: %v", rec.errs)
	}
}

// Answers made by a Respond function are remembered too.
func TestStrictRemembersResponderAnswers(t *testing.T) {
	rec := &failures{TB: t}
	srv := llmtest.New(rec)
	srv.Respond(func(llmtest.Request) llmtest.Response {
		return llmtest.Stream(llmtest.Think("why"), llmtest.StartCall(0, "r1", "bash", "{}"), llmtest.Finish("tool_calls"))
	})
	srv.ExpectRefusals()
	post(t, srv, chat("deepseek-flash", "", ""))
	call := `,{"role":"assistant","reasoning_content":"","tool_calls":[{"id":"r1","type":"function","function":{"name":"bash","arguments":"{}"}}]},{"role":"tool","tool_call_id":"r1","content":"x"}`
	if status, _ := post(t, srv, chat("deepseek-flash", call, "")); status != 400 {
		t.Errorf("lost reasoning of a responder's answer accepted: %d", status)
	}
}

// HasReasoning tells a missing reasoning_content from an empty one.
func TestMessageHasReasoning(t *testing.T) {
	for body, want := range map[string]bool{
		`{"role":"assistant"}`:                             false,
		`{"role":"assistant","reasoning_content":null}`:    false,
		`{"role":"assistant","reasoning_content":""}`:      true,
		`{"role":"assistant","reasoning_content":"x y"}`:   true,
		`{"role":"tool","content":"c","tool_call_id":"i"}`: false,
	} {
		var m llmtest.Message
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatal(err)
		}
		if m.HasReasoning != want {
			t.Errorf("%s: HasReasoning %v", body, m.HasReasoning)
		}
		if body == `{"role":"assistant","reasoning_content":"x y"}` && m.ReasoningContent != "x y" {
			t.Errorf("reasoning %q", m.ReasoningContent)
		}
	}
}
