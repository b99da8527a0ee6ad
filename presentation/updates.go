package presentation

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"

	sdk "github.com/coder/acp-go-sdk"
)

// UpdateWriter writes session/update notifications straight to the
// connection's serialized writer, one whole line per Write: the one encoder
// of session/update. The shapes cards send are appended by hand
// (encode.go); the others go through encoding/json on variant structs —
// never the SDK's own marshalling, a map[string]any round trip that cost 8×
// the journal's decode time on replay and loses integer precision above
// 2^53. Ordering holds because every update of a request is written before
// its handler writes the reply, through the same writer.
type UpdateWriter struct {
	w    io.Writer
	pool sync.Pool // of *lineEncoder
}

// NewUpdateWriter returns an UpdateWriter writing to w.
func NewUpdateWriter(w io.Writer) *UpdateWriter {
	return &UpdateWriter{w: w, pool: sync.Pool{New: func() any { return newLineEncoder() }}}
}

type wireNotification struct {
	JSONRPC string     `json:"jsonrpc"`
	Method  string     `json:"method"`
	Params  wireParams `json:"params"`
}

type wireParams struct {
	SessionID sdk.SessionId `json:"sessionId"`
	Update    any           `json:"update"`
}

// maxPooledUpdate is the largest line buffer kept for reuse: a rare huge
// line (a replayed card's whole output) must not stay pinned.
const maxPooledUpdate = 1 << 20

// SessionUpdate writes one notification. The shapes cards send (live
// output above all) are appended straight into the line (wire.go); any
// other goes through encoding/json.
func (u *UpdateWriter) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	e := u.pool.Get().(*lineEncoder)
	defer func() {
		if cap(e.buf) > maxPooledUpdate {
			e.buf = nil
		}
		if e.scratch.Cap() > maxPooledUpdate {
			e.scratch = bytes.Buffer{}
		}
		u.pool.Put(e)
	}()
	line, err := e.line(string(n.SessionId), n.Update)
	if err != nil {
		return err
	}
	_, err = u.w.Write(line)
	return err
}

// Extension writes one notification whose update is a shape the SDK lacks
// (a Notice, a CompactionUpdate: see schema.go), through encoding/json.
func (u *UpdateWriter) Extension(sessionID string, update any) error {
	b, err := json.Marshal(wireNotification{JSONRPC: "2.0", Method: sdk.ClientMethodSessionUpdate,
		Params: wireParams{SessionID: sdk.SessionId(sessionID), Update: update}})
	if err != nil {
		return err
	}
	_, err = u.w.Write(append(b, '\n'))
	return err
}

// line encodes one notification into e.buf.
func (e *lineEncoder) line(sessionID string, update sdk.SessionUpdate) ([]byte, error) {
	if id, data, ok := LiveOutput(update); ok {
		e.buf = appendLiveOutput(e.buf[:0], sessionID, id, data)
		return e.buf, nil
	}
	v := variant(update)
	b, ok, err := e.appendNotification(e.buf[:0], sessionID, v)
	if ok || err != nil {
		e.buf = b
		return b, err
	}
	e.scratch.Reset()
	err = e.enc.Encode(wireNotification{
		JSONRPC: "2.0",
		Method:  sdk.ClientMethodSessionUpdate,
		Params:  wireParams{SessionID: sdk.SessionId(sessionID), Update: v},
	})
	e.buf = append(e.buf[:0], e.scratch.Bytes()...) // Encode ended the line
	return e.buf, err
}

// variant returns the update's one variant with its discriminator set, or
// the SDK's union for a variant this daemon never sends.
func variant(u sdk.SessionUpdate) any {
	switch {
	case u.UserMessageChunk != nil:
		v := *u.UserMessageChunk
		if c, ok := textChunk("user_message_chunk", v.Meta, v.Content, v.MessageId); ok {
			return c
		}
		v.SessionUpdate = "user_message_chunk"
		return v
	case u.AgentMessageChunk != nil:
		v := *u.AgentMessageChunk
		if c, ok := textChunk("agent_message_chunk", v.Meta, v.Content, v.MessageId); ok {
			return c
		}
		v.SessionUpdate = "agent_message_chunk"
		return v
	case u.AgentThoughtChunk != nil:
		v := *u.AgentThoughtChunk
		if c, ok := textChunk("agent_thought_chunk", v.Meta, v.Content, v.MessageId); ok {
			return c
		}
		v.SessionUpdate = "agent_thought_chunk"
		return v
	case u.ToolCall != nil:
		v := u.ToolCall
		return wireToolCall{Meta: v.Meta, Content: v.Content, Kind: v.Kind, Locations: v.Locations,
			RawInput: v.RawInput, RawOutput: v.RawOutput, SessionUpdate: "tool_call",
			Status: v.Status, Title: v.Title, ToolCallID: v.ToolCallId}
	case u.ToolCallUpdate != nil:
		v := u.ToolCallUpdate
		return wireToolCallUpdate{Meta: v.Meta, Content: v.Content, Kind: v.Kind, Locations: v.Locations,
			RawInput: v.RawInput, RawOutput: v.RawOutput, SessionUpdate: "tool_call_update",
			Status: v.Status, Title: v.Title, ToolCallID: v.ToolCallId}
	case u.ConfigOptionUpdate != nil:
		v := *u.ConfigOptionUpdate
		v.SessionUpdate = "config_option_update"
		return v
	case u.CurrentModeUpdate != nil:
		v := *u.CurrentModeUpdate
		v.SessionUpdate = "current_mode_update"
		return v
	case u.UsageUpdate != nil:
		v := *u.UsageUpdate
		v.SessionUpdate = "usage_update"
		return v
	case u.AvailableCommandsUpdate != nil:
		v := *u.AvailableCommandsUpdate
		v.SessionUpdate = "available_commands_update"
		return v
	}
	return u
}

// wireToolCall and wireToolCallUpdate are the SDK's tool-call variants with
// content that marshals without the SDK's map round trip.
type wireToolCall struct {
	Meta          map[string]any         `json:"_meta,omitempty"`
	Content       toolContents           `json:"content,omitempty"`
	Kind          sdk.ToolKind           `json:"kind,omitempty"`
	Locations     []sdk.ToolCallLocation `json:"locations,omitempty"`
	RawInput      any                    `json:"rawInput,omitempty"`
	RawOutput     any                    `json:"rawOutput,omitempty"`
	SessionUpdate string                 `json:"sessionUpdate"`
	Status        sdk.ToolCallStatus     `json:"status,omitempty"`
	Title         string                 `json:"title"`
	ToolCallID    sdk.ToolCallId         `json:"toolCallId"`
}

type wireToolCallUpdate struct {
	Meta          map[string]any         `json:"_meta,omitempty"`
	Content       toolContents           `json:"content,omitempty"`
	Kind          *sdk.ToolKind          `json:"kind,omitempty"`
	Locations     []sdk.ToolCallLocation `json:"locations,omitempty"`
	RawInput      any                    `json:"rawInput,omitempty"`
	RawOutput     any                    `json:"rawOutput,omitempty"`
	SessionUpdate string                 `json:"sessionUpdate"`
	Status        *sdk.ToolCallStatus    `json:"status,omitempty"`
	Title         *string                `json:"title,omitempty"`
	ToolCallID    sdk.ToolCallId         `json:"toolCallId"`
}

// toolContents marshals the two content shapes cards use (a plain text block
// and a terminal reference) directly; any other item goes through the SDK.
type toolContents []sdk.ToolCallContent

func (tc toolContents) MarshalJSON() ([]byte, error) {
	if tc == nil {
		return []byte("null"), nil
	}
	out := []byte{'['}
	for i, it := range tc {
		if i > 0 {
			out = append(out, ',')
		}
		b, err := marshalToolContent(it)
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return append(out, ']'), nil
}

func marshalToolContent(it sdk.ToolCallContent) ([]byte, error) {
	switch {
	case it.Content != nil && it.Content.Meta == nil && isPlainText(it.Content.Content):
		text, err := json.Marshal(it.Content.Content.Text.Text)
		if err != nil {
			return nil, err
		}
		return append(append([]byte(`{"type":"content","content":{"type":"text","text":`), text...), "}}"...), nil
	case it.Terminal != nil && it.Terminal.Meta == nil:
		id, err := json.Marshal(it.Terminal.TerminalId)
		if err != nil {
			return nil, err
		}
		return append(append([]byte(`{"type":"terminal","terminalId":`), id...), '}'), nil
	}
	return json.Marshal(it)
}

func isPlainText(b sdk.ContentBlock) bool {
	t := b.Text
	return t != nil && t.Meta == nil && t.Annotations == nil &&
		b.Image == nil && b.Audio == nil && b.ResourceLink == nil && b.Resource == nil
}

// NewLineBatch returns a LineBatch writing to w.
func NewLineBatch(w io.Writer) *LineBatch { return &LineBatch{w: w} }

// LineBatch gathers whole lines and writes them to w in large batches, for
// replay: one write per ~64 KiB instead of one per update. Every Write to w
// carries whole lines only, so another session's live updates, written to
// the same serialized writer, never split one. The first line goes out at
// once, so the client sees the replay start immediately. Not safe for
// concurrent use (the replay drawer is its only writer).
type LineBatch struct {
	w       io.Writer
	buf     []byte
	flushed bool // the first line went out
	err     error
}

const lineBatchSize = 64 << 10

func (b *LineBatch) Write(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	b.buf = append(b.buf, p...)
	if !b.flushed || len(b.buf) >= lineBatchSize {
		b.flushed = true
		return len(p), b.Flush()
	}
	return len(p), nil
}

// Flush writes what is gathered.
func (b *LineBatch) Flush() error {
	if len(b.buf) > 0 && b.err == nil {
		_, b.err = b.w.Write(b.buf)
		b.buf = b.buf[:0]
	}
	return b.err
}

// wireTextChunk is a message chunk whose content is a plain text block,
// marshalled without the SDK's map round trip.
type wireTextChunk struct {
	Meta          map[string]any `json:"_meta,omitempty"`
	Content       wireText       `json:"content"`
	MessageID     *string        `json:"messageId,omitempty"`
	SessionUpdate string         `json:"sessionUpdate"`
}

type wireText struct {
	Text string `json:"text"`
	Type string `json:"type"`
}

func textChunk(kind string, meta map[string]any, c sdk.ContentBlock, id *string) (wireTextChunk, bool) {
	if !isPlainText(c) {
		return wireTextChunk{}, false
	}
	return wireTextChunk{Meta: meta, Content: wireText{Text: c.Text.Text, Type: "text"}, MessageID: id, SessionUpdate: kind}, true
}
