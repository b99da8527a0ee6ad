package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/dsh-acp/dsh-acp/internal/wirejson"
)

// chatBody is what one chat completion request's body is encoded from. The
// client encodes it itself (appendJSON) rather than through go-openai's
// structs, whose omitempty tags drop an empty reasoning_content, which
// DeepSeek's thinking mode requires on every assistant message with tool
// calls.
type chatBody struct {
	model     string
	maxTokens int
	usage     bool     // stream_options.include_usage
	thinking  Thinking // ThinkingDefault sends neither thinking parameter
	messages  []Message
	tools     []ToolDef
}

// emptyParameters is the schema sent for a tool without one.
const emptyParameters = `{"type":"object","properties":{}}`

// encode returns the body's JSON. It fails only on a tool whose Parameters
// are not valid JSON.
func (p *chatBody) encode() ([]byte, error) {
	return p.appendJSON(make([]byte, 0, p.sizeHint()))
}

// sizeHint is about the encoded size, so that encode allocates once.
func (p *chatBody) sizeHint() int {
	n := 256 + len(p.model)
	for i := range p.messages {
		m := &p.messages[i]
		n += 64 + len(m.Content) + len(m.Reasoning) + len(m.ToolCallID)
		for _, tc := range m.ToolCalls {
			n += 64 + len(tc.ID) + len(tc.Name) + len(tc.Args)
		}
	}
	for _, t := range p.tools {
		n += 64 + len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return n + n/16 // escapes
}

// appendJSON appends the request body: model, messages, max_tokens, stream,
// tools, stream_options, thinking, reasoning_effort. It never writes
// tool_choice (DeepSeek's thinking mode refuses most values of it, and the
// default, auto, is what the agent wants).
func (p *chatBody) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"model":`...)
	b = wirejson.AppendString(b, p.model)
	b = append(b, `,"messages":[`...)
	for i := range p.messages {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendMessage(b, &p.messages[i])
	}
	b = append(b, ']')
	if p.maxTokens > 0 {
		b = append(b, `,"max_tokens":`...)
		b = strconv.AppendInt(b, int64(p.maxTokens), 10)
	}
	b = append(b, `,"stream":true`...)
	if len(p.tools) > 0 {
		var err error
		if b, err = appendTools(b, p.tools); err != nil {
			return nil, err
		}
	}
	if p.usage {
		b = append(b, `,"stream_options":{"include_usage":true}`...)
	}
	switch {
	case p.thinking == ThinkingOff:
		b = append(b, `,"thinking":{"type":"disabled"}`...)
	case p.thinking.Enabled():
		b = append(b, `,"thinking":{"type":"enabled"},"reasoning_effort":`...)
		b = wirejson.AppendString(b, string(p.thinking))
	}
	return append(b, '}'), nil
}

// appendMessage appends one message. An assistant message with tool calls
// always carries reasoning_content, an empty string when the model gave no
// reasoning: DeepSeek's thinking mode answers 400 to a conversation where
// one lacks it. Other assistant messages carry it when it is set (DeepSeek
// ignores it there); other roles never do. Empty content is left out, as
// the OpenAI API allows for an assistant message with tool calls.
func appendMessage(b []byte, m *Message) []byte {
	b = append(b, `{"role":`...)
	b = wirejson.AppendString(b, string(m.Role))
	if m.Content != "" {
		b = append(b, `,"content":`...)
		b = wirejson.AppendString(b, m.Content)
	}
	if m.Role == RoleAssistant && (len(m.ToolCalls) > 0 || m.Reasoning != "") {
		b = append(b, `,"reasoning_content":`...)
		b = wirejson.AppendString(b, m.Reasoning)
	}
	if len(m.ToolCalls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, tc := range m.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			if tc.ID != "" {
				b = append(b, `"id":`...)
				b = wirejson.AppendString(b, tc.ID)
				b = append(b, ',')
			}
			b = append(b, `"type":"function","function":{"name":`...)
			b = wirejson.AppendString(b, tc.Name)
			b = append(b, `,"arguments":`...)
			b = wirejson.AppendString(b, tc.Args)
			b = append(b, `}}`...)
		}
		b = append(b, ']')
	}
	if m.ToolCallID != "" {
		b = append(b, `,"tool_call_id":`...)
		b = wirejson.AppendString(b, m.ToolCallID)
	}
	return append(b, '}')
}

// appendTools appends the tools field; a tool's Parameters must be valid
// JSON (they are compacted), empty ones stand for an object without
// properties.
func appendTools(b []byte, tools []ToolDef) ([]byte, error) {
	b = append(b, `,"tools":[`...)
	for i, t := range tools {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"function","function":{"name":`...)
		b = wirejson.AppendString(b, t.Name)
		if t.Description != "" {
			b = append(b, `,"description":`...)
			b = wirejson.AppendString(b, t.Description)
		}
		b = append(b, `,"parameters":`...)
		params := t.Parameters
		if len(bytes.TrimSpace(params)) == 0 {
			params = json.RawMessage(emptyParameters)
		}
		buf := bytes.NewBuffer(b)
		if err := json.Compact(buf, params); err != nil {
			return nil, fmt.Errorf("the parameters of tool %q are not valid JSON: %w", t.Name, err)
		}
		b = append(buf.Bytes(), `}}`...)
	}
	return append(b, ']'), nil
}

// bodyKey is the context key under which Stream hands the encoded body to
// statusDoer, which sends it in place of the body go-openai encoded (go-openai
// is kept for the event stream reader and its error events).
type bodyKey struct{}

// withChatBody returns ctx carrying body for the chat request made with it.
func withChatBody(ctx context.Context, body []byte) context.Context {
	return context.WithValue(ctx, bodyKey{}, body)
}

// swapBody replaces req's body by the one its context carries, if any.
func swapBody(req *http.Request) *http.Request {
	body, ok := req.Context().Value(bodyKey{}).([]byte)
	if !ok || req.Method != http.MethodPost {
		return req
	}
	r := req.WithContext(req.Context()) // a shallow copy: go-openai's request stays as it was
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return r
}
