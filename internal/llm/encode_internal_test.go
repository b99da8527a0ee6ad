package llm

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

// goOpenAIBody is the body the client sent before it encoded its own: req
// converted to go-openai's request and marshalled by it. It is the
// reference the encoder is compared and benchmarked against.
func goOpenAIBody(p *chatBody) ([]byte, error) {
	out := openai.ChatCompletionRequest{Model: p.model, Stream: true, MaxTokens: p.maxTokens,
		Messages: make([]openai.ChatCompletionMessage, 0, len(p.messages))}
	if p.usage {
		out.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	}
	for _, m := range p.messages {
		om := openai.ChatCompletionMessage{Role: string(m.Role), Content: m.Content, ToolCallID: m.ToolCallID}
		if m.Role == RoleAssistant {
			om.ReasoningContent = m.Reasoning
		}
		for _, tc := range m.ToolCalls {
			om.ToolCalls = append(om.ToolCalls, openai.ToolCall{ID: tc.ID, Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: tc.Name, Arguments: tc.Args}})
		}
		out.Messages = append(out.Messages, om)
	}
	for _, t := range p.tools {
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage(emptyParameters)
		}
		out.Tools = append(out.Tools, openai.Tool{Type: openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	return json.Marshal(out)
}

// decoded is a body as a generic JSON value.
func decoded(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return v
}

// sampleBody is a conversation with every kind of message: a tool call
// with reasoning, one without, an answer with reasoning, a user message
// carrying a stray Reasoning, text that needs escaping.
func sampleBody() chatBody {
	return chatBody{
		model: "deepseek-flash", maxTokens: 4096, usage: true,
		messages: []Message{
			{Role: RoleSystem, Content: "You are <dsh>: \"quote\" & \\ \n\t\u2028"},
			{Role: RoleUser, Content: "list files", Reasoning: "not sent"},
			{Role: RoleAssistant, Reasoning: "I should run ls.", ToolCalls: []ToolCall{{ID: "c1", Name: "bash", Args: `{"command":"ls"}`}}},
			{Role: RoleTool, ToolCallID: "c1", Content: "a\nb"},
			{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c2", Name: "bash", Args: `{"command":"cat a"}`}, {ID: "c3", Name: "bash", Args: "not json"}}},
			{Role: RoleTool, ToolCallID: "c2", Content: "x"},
			{Role: RoleTool, ToolCallID: "c3", Content: "y"},
			{Role: RoleAssistant, Content: "done", Reasoning: "summing up"},
			{Role: RoleAssistant, Content: "plain"},
		},
		tools: []ToolDef{
			{Name: "bash", Description: "run", Parameters: json.RawMessage(" {\"type\": \"object\"} ")},
			{Name: "noop"},
		},
	}
}

// The body is go-openai's, field for field, except that every assistant
// message with tool calls carries reasoning_content, empty or not.
func TestEncodeMatchesGoOpenAIButKeepsReasoning(t *testing.T) {
	p := sampleBody()
	own, err := p.encode()
	if err != nil {
		t.Fatal(err)
	}
	ref, err := goOpenAIBody(&p)
	if err != nil {
		t.Fatal(err)
	}
	got, want := decoded(t, own), decoded(t, ref)
	// go-openai drops the empty reasoning of message 4 (the second tool call).
	msg := want["messages"].([]any)[4].(map[string]any)
	if _, ok := msg["reasoning_content"]; ok {
		t.Fatalf("go-openai kept an empty reasoning_content; the reference changed: %s", ref)
	}
	msg["reasoning_content"] = ""
	if !reflect.DeepEqual(got, want) {
		t.Errorf("encoded body differs from go-openai's:\n own %s\n ref %s", own, ref)
	}
}

// Which messages carry reasoning_content, and with what.
func TestEncodeReasoningContract(t *testing.T) {
	p := sampleBody()
	own, err := p.encode()
	if err != nil {
		t.Fatal(err)
	}
	msgs := decoded(t, own)["messages"].([]any)
	want := []any{nil, nil, "I should run ls.", nil, "", nil, nil, "summing up", nil} // nil: key absent
	for i, m := range msgs {
		v, ok := m.(map[string]any)["reasoning_content"]
		if !ok {
			v = nil
		}
		if v != want[i] || (want[i] != nil) != ok {
			t.Errorf("message %d: reasoning_content %#v (present %v), want %#v", i, v, ok, want[i])
		}
	}
	if strings.Contains(string(own), "tool_choice") {
		t.Errorf("the body names tool_choice: %s", own)
	}
}

func TestEncodeThinkingParameters(t *testing.T) {
	for _, tt := range []struct {
		level Thinking
		want  string // the body's tail after stream_options
	}{
		{ThinkingDefault, `}`},
		{ThinkingOff, `,"thinking":{"type":"disabled"}}`},
		{ThinkingLow, `,"thinking":{"type":"enabled"},"reasoning_effort":"low"}`},
		{ThinkingHigh, `,"thinking":{"type":"enabled"},"reasoning_effort":"high"}`},
		{ThinkingMax, `,"thinking":{"type":"enabled"},"reasoning_effort":"max"}`},
	} {
		p := chatBody{model: "m", usage: true, thinking: tt.level, messages: []Message{{Role: RoleUser, Content: "hi"}}}
		b, err := p.encode()
		if err != nil {
			t.Fatal(err)
		}
		const head = `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}`
		if string(b) != head+tt.want {
			t.Errorf("%s: %s\nwant %s", tt.level, b, head+tt.want)
		}
	}
}

func TestEncodeRefusesInvalidToolSchema(t *testing.T) {
	p := chatBody{model: "m", tools: []ToolDef{{Name: "bad", Parameters: json.RawMessage(`{"type":`)}}}
	if _, err := p.encode(); err == nil || !strings.Contains(err.Error(), `"bad"`) {
		t.Fatalf("err %v, want one naming the tool", err)
	}
}

// Any text — invalid UTF-8, control bytes, quotes — comes back from the
// body as encoding/json would carry it, and empty reasoning on a tool call
// is still there.
func FuzzEncodeMessage(f *testing.F) {
	f.Add("hello", "", "c1", "bash", `{"a":1}`, true)
	f.Add("<&>\u2028\x00\xff", "think\n\"", "", "", "", false)
	f.Add("", "r", "id\\", "n\t", "{", true)
	f.Fuzz(func(t *testing.T, content, reasoning, id, name, args string, call bool) {
		m := Message{Role: RoleAssistant, Content: content, Reasoning: reasoning}
		if call {
			m.ToolCalls = []ToolCall{{ID: id, Name: name, Args: args}}
		}
		p := chatBody{model: name, messages: []Message{m, {Role: RoleTool, ToolCallID: id, Content: args}}}
		b, err := p.encode()
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Model    string `json:"model"`
			Messages []struct {
				Role       string  `json:"role"`
				Content    *string `json:"content"`
				Reasoning  *string `json:"reasoning_content"`
				ToolCallID string  `json:"tool_call_id"`
				ToolCalls  []struct {
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("invalid JSON: %v\n%q", err, b)
		}
		same := func(what, got, sent string) {
			if ref := viaJSON(sent); got != ref {
				t.Errorf("%s: %q, want %q", what, got, ref)
			}
		}
		same("model", got.Model, name)
		a := got.Messages[0]
		if (a.Content != nil) != (content != "") || (a.Content != nil && *a.Content != viaJSON(content)) {
			t.Errorf("content %v, want %q", a.Content, content)
		}
		if wantR := call || reasoning != ""; (a.Reasoning != nil) != wantR {
			t.Fatalf("reasoning_content present %v, want %v: %s", a.Reasoning != nil, wantR, b)
		}
		if a.Reasoning != nil {
			same("reasoning", *a.Reasoning, reasoning)
		}
		if call {
			same("id", a.ToolCalls[0].ID, id)
			same("name", a.ToolCalls[0].Function.Name, name)
			same("args", a.ToolCalls[0].Function.Arguments, args)
		}
		same("tool_call_id", got.Messages[1].ToolCallID, id)
	})
}

// viaJSON is s as encoding/json carries it (invalid UTF-8 becomes U+FFFD).
func viaJSON(s string) string {
	b, _ := json.Marshal(s)
	var out string
	_ = json.Unmarshal(b, &out)
	return out
}

// benchBody is a long agent conversation: n tool calls with reasoning,
// outputs of 2 KiB, and the daemon's three tools.
func benchBody(n int) chatBody {
	out := strings.Repeat("drwxr-xr-x  2 user user 4096 Dec  4 06:00 some-directory-name\n", 32)
	p := chatBody{model: "deepseek-flash", usage: true, thinking: ThinkingHigh}
	p.messages = append(p.messages, Message{Role: RoleSystem, Content: strings.Repeat("You are a careful agent. ", 200)})
	for i := range n {
		id := fmt.Sprintf("call_%d", i)
		p.messages = append(p.messages,
			Message{Role: RoleUser, Content: "look at the next directory, please"},
			Message{Role: RoleAssistant, Reasoning: strings.Repeat("The user wants the listing; I will run ls. ", 8),
				ToolCalls: []ToolCall{{ID: id, Name: "bash", Args: `{"command":"ls -la /some/dir","timeout":30}`}}},
			Message{Role: RoleTool, ToolCallID: id, Content: out},
			Message{Role: RoleAssistant, Content: "Here is the listing <with> \"quotes\" & more."})
	}
	schema := json.RawMessage(`{"type":"object","properties":{"command":{"type":"string","description":"the command line"},"timeout":{"type":"integer"}},"required":["command"]}`)
	for _, name := range []string{"bash", "bash_output", "bash_kill"} {
		p.tools = append(p.tools, ToolDef{Name: name, Description: strings.Repeat("Runs things. ", 40), Parameters: schema})
	}
	return p
}

// BenchmarkEncodeBody compares the request encoding before (go-openai's
// structs and encoding/json) and now (appendJSON), on a 100-call
// conversation.
func BenchmarkEncodeBody(b *testing.B) {
	p := benchBody(100)
	ref, _ := goOpenAIBody(&p)
	b.Run("go-openai", func(b *testing.B) {
		b.SetBytes(int64(len(ref)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := goOpenAIBody(&p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("own", func(b *testing.B) {
		b.SetBytes(int64(len(ref)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.encode(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// What reaches the provider is the body encode wrote, byte for byte (the
// transport swaps it in for go-openai's stub), with the client's settings.
func TestStreamSendsTheEncodedBody(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply("ok"))
	c := New(Config{BaseURL: srv.URL(), APIKey: "sk-test-0123456789", Model: "deepseek-flash", MaxTokens: 4096, Thinking: ThinkingMax})
	p := sampleBody()
	if _, err := c.Stream(t.Context(), Request{Messages: p.messages, Tools: p.tools}, nil); err != nil {
		t.Fatal(err)
	}
	p.thinking = ThinkingMax
	want, err := p.encode()
	if err != nil {
		t.Fatal(err)
	}
	r := srv.Last()
	if string(r.Raw) != string(want) {
		t.Errorf("sent\n%s\nwant\n%s", r.Raw, want)
	}
	if r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Authorization") != "Bearer sk-test-0123456789" {
		t.Errorf("headers %v", r.Header)
	}
}
