package presentation

import (
	"bytes"
	"encoding/json"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/internal/wirejson"
)

// lineEncoder writes session/update lines by appending, for the variants
// a card sends (text chunks, tool calls, tool call updates): the same
// JSON values as the SDK's encoding (held equal by TestUpdateWriterMatchesTheSDK),
// without reflection except for nested values of types it does not know,
// which go through encoding/json.
type lineEncoder struct {
	buf     []byte        // the line being built; reused
	scratch bytes.Buffer  // for encoding/json's fallbacks
	enc     *json.Encoder // on scratch, HTML escaping off
}

func newLineEncoder() *lineEncoder {
	e := &lineEncoder{}
	e.enc = json.NewEncoder(&e.scratch)
	e.enc.SetEscapeHTML(false)
	return e
}

// appendLiveOutput appends the session/update line of a card's live output
// (LiveOutput), newline included: the bytes the generic
// encoder writes for that update, field for field.
func appendLiveOutput(b []byte, sessionID, callID, data string) []byte {
	b = append(b, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":`...)
	b = wirejson.AppendString(b, sessionID)
	b = append(b, `,"update":{"_meta":{"terminal_output":{"terminal_id":`...)
	b = wirejson.AppendString(b, callID)
	b = append(b, `,"data":`...)
	b = wirejson.AppendString(b, data)
	b = append(b, `}},"sessionUpdate":"tool_call_update","toolCallId":`...)
	b = wirejson.AppendString(b, callID)
	return append(b, "}}}\n"...)
}

// appendNotification appends the line of update (a value variant returns),
// newline included; ok is false for a variant it does not write.
func (e *lineEncoder) appendNotification(b []byte, sessionID string, update any) (out []byte, ok bool, err error) {
	b = append(b, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":`...)
	b = wirejson.AppendString(b, sessionID)
	b = append(b, `,"update":`...)
	switch v := update.(type) {
	case wireTextChunk:
		b, err = e.textChunk(b, v)
	case wireToolCall:
		b, err = e.toolCall(b, v)
	case wireToolCallUpdate:
		b, err = e.toolCallUpdate(b, v)
	default:
		return b, false, nil
	}
	return append(b, "}}\n"...), true, err
}

func (e *lineEncoder) textChunk(b []byte, v wireTextChunk) ([]byte, error) {
	b = append(b, '{')
	var err error
	if len(v.Meta) > 0 {
		b = append(b, `"_meta":`...)
		if b, err = e.meta(b, v.Meta); err != nil {
			return b, err
		}
		b = append(b, ',')
	}
	b = append(b, `"content":{"text":`...)
	b = wirejson.AppendString(b, v.Content.Text)
	b = append(b, `,"type":`...)
	b = wirejson.AppendString(b, v.Content.Type)
	b = append(b, '}')
	if v.MessageID != nil {
		b = append(b, `,"messageId":`...)
		b = wirejson.AppendString(b, *v.MessageID)
	}
	b = append(b, `,"sessionUpdate":`...)
	b = wirejson.AppendString(b, v.SessionUpdate)
	return append(b, '}'), nil
}

func (e *lineEncoder) toolCall(b []byte, v wireToolCall) ([]byte, error) {
	b, err := e.callHead(b, v.Meta, v.Content)
	if err != nil {
		return b, err
	}
	if v.Kind != "" {
		b = append(b, `"kind":`...)
		b = append(wirejson.AppendString(b, string(v.Kind)), ',')
	}
	if b, err = e.callTail(b, v.Locations, v.RawInput, v.RawOutput, v.SessionUpdate); err != nil {
		return b, err
	}
	if v.Status != "" {
		b = append(b, `,"status":`...)
		b = wirejson.AppendString(b, string(v.Status))
	}
	b = append(b, `,"title":`...)
	b = wirejson.AppendString(b, v.Title)
	b = append(b, `,"toolCallId":`...)
	b = wirejson.AppendString(b, string(v.ToolCallID))
	return append(b, '}'), nil
}

func (e *lineEncoder) toolCallUpdate(b []byte, v wireToolCallUpdate) ([]byte, error) {
	b, err := e.callHead(b, v.Meta, v.Content)
	if err != nil {
		return b, err
	}
	if v.Kind != nil {
		b = append(b, `"kind":`...)
		b = append(wirejson.AppendString(b, string(*v.Kind)), ',')
	}
	if b, err = e.callTail(b, v.Locations, v.RawInput, v.RawOutput, v.SessionUpdate); err != nil {
		return b, err
	}
	if v.Status != nil {
		b = append(b, `,"status":`...)
		b = wirejson.AppendString(b, string(*v.Status))
	}
	if v.Title != nil {
		b = append(b, `,"title":`...)
		b = wirejson.AppendString(b, *v.Title)
	}
	b = append(b, `,"toolCallId":`...)
	b = wirejson.AppendString(b, string(v.ToolCallID))
	return append(b, '}'), nil
}

// callHead opens a tool call object with its _meta and content, each
// followed by a comma.
func (e *lineEncoder) callHead(b []byte, meta map[string]any, content toolContents) ([]byte, error) {
	b = append(b, '{')
	var err error
	if len(meta) > 0 {
		b = append(b, `"_meta":`...)
		if b, err = e.meta(b, meta); err != nil {
			return b, err
		}
		b = append(b, ',')
	}
	if len(content) > 0 {
		b = append(b, `"content":[`...)
		for i, it := range content {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = e.content(b, it); err != nil {
				return b, err
			}
		}
		b = append(b, "],"...)
	}
	return b, nil
}

// callTail writes locations, rawInput and rawOutput (each followed by a
// comma) and the sessionUpdate discriminator.
func (e *lineEncoder) callTail(b []byte, locs []sdk.ToolCallLocation, in, out any, kind string) ([]byte, error) {
	var err error
	if len(locs) > 0 {
		b = append(b, `"locations":`...)
		if b, err = e.value(b, locs); err != nil {
			return b, err
		}
		b = append(b, ',')
	}
	for _, f := range []struct {
		name string
		v    any
	}{{`"rawInput":`, in}, {`"rawOutput":`, out}} {
		if f.v == nil {
			continue
		}
		b = append(b, f.name...)
		if b, err = e.value(b, f.v); err != nil {
			return b, err
		}
		b = append(b, ',')
	}
	b = append(b, `"sessionUpdate":`...)
	return wirejson.AppendString(b, kind), nil
}

func (e *lineEncoder) content(b []byte, it sdk.ToolCallContent) ([]byte, error) {
	switch {
	case it.Content != nil && it.Content.Meta == nil && isPlainText(it.Content.Content):
		b = append(b, `{"type":"content","content":{"type":"text","text":`...)
		b = wirejson.AppendString(b, it.Content.Content.Text.Text)
		return append(b, "}}"...), nil
	case it.Terminal != nil && it.Terminal.Meta == nil:
		b = append(b, `{"type":"terminal","terminalId":`...)
		b = wirejson.AppendString(b, it.Terminal.TerminalId)
		return append(b, '}'), nil
	}
	return e.value(b, it)
}

// meta writes a _meta map, keys sorted as encoding/json sorts them.
func (e *lineEncoder) meta(b []byte, m map[string]any) ([]byte, error) {
	var small [4]string
	keys := small[:0]
	for k := range m {
		i := len(keys)
		keys = append(keys, k)
		for ; i > 0 && keys[i-1] > k; i-- {
			keys[i] = keys[i-1]
		}
		keys[i] = k
	}
	b = append(b, '{')
	var err error
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(wirejson.AppendString(b, k), ':')
		if b, err = e.value(b, m[k]); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// value writes any value: an Appender or a string directly, anything else
// through encoding/json.
func (e *lineEncoder) value(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case wirejson.Appender:
		return x.AppendJSON(b), nil
	case string:
		return wirejson.AppendString(b, x), nil
	case nil:
		return append(b, "null"...), nil
	}
	e.scratch.Reset()
	if err := e.enc.Encode(v); err != nil {
		return b, err
	}
	return append(b, bytes.TrimSuffix(e.scratch.Bytes(), []byte("\n"))...), nil
}
