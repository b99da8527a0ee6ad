package replay

import (
	"bytes"
	"encoding/json"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/wirejson"
)

// bigCard is the card output length past which a tool_result line is
// built by bigResultLine: the card output (up to MaxCardOutput) is
// appended straight into the line instead of passing through
// encoding/json's own buffer and then the encoder's, so a large record
// costs one buffer of its size, which is not kept after the write.
const bigCard = 64 << 10

// keptLine is the largest line buffer an encoder keeps between records.
const keptLine = 256 << 10

// bigLine encodes a record carrying a large card output as plain text (a
// tool_result's cardOutput, an output record's text) into a fresh buffer:
// the same bytes as the generic encoding. ok is false for a record it does
// not take.
func (e *encoder) bigLine(r *wireRecord) (line []byte, ok bool, err error) {
	if r.Type == typeOutput && len(r.Text) >= bigCard && r.TextZ == nil {
		return e.bigOutputLine(r)
	}
	return e.bigResultLine(r)
}

// bigOutputLine: an output record's text is its last field.
func (e *encoder) bigOutputLine(r *wireRecord) ([]byte, bool, error) {
	head := wireRecord{V: r.V, Seq: r.Seq, T: r.T, Type: r.Type, ID: r.ID}
	e.buf.Reset()
	if err := e.enc.Encode(&head); err != nil {
		return nil, true, err
	}
	prefix := bytes.TrimSuffix(e.buf.Bytes(), []byte("}\n"))
	b := make([]byte, 0, len(prefix)+len(r.Text)+64)
	b = append(b, prefix...)
	b = append(b, `,"text":`...)
	b = wirejson.AppendString(b, r.Text)
	return append(b, "}\n"...), true, nil
}

// bigResultLine: a tool_result record whose card output is plain text.
func (e *encoder) bigResultLine(r *wireRecord) (line []byte, ok bool, err error) {
	res := r.Result
	if r.Type != typeToolResult || res == nil || len(res.CardOutput) < bigCard || res.v1Result != (v1Result{}) {
		return nil, false, nil
	}
	// The record without its result ends the line with "}\n"; a
	// tool_result has no field after its result.
	head := *r
	head.Result = nil
	e.buf.Reset()
	if err := e.enc.Encode(&head); err != nil {
		return nil, true, err
	}
	prefix := bytes.TrimSuffix(e.buf.Bytes(), []byte("}\n"))
	// The result's fields after the card output, as encoding/json writes them.
	tail := struct {
		CardOutputZ []byte          `json:"cardOutputZ,omitempty"`
		Task        *event.Task     `json:"task,omitempty"`
		Payload     json.RawMessage `json:"payload,omitempty"`
	}{res.CardOutputZ, res.Task, res.Payload}
	var rest bytes.Buffer
	enc := json.NewEncoder(&rest)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&tail); err != nil {
		return nil, true, err
	}
	restFields := bytes.TrimSuffix(bytes.TrimPrefix(rest.Bytes(), []byte("{")), []byte("}\n"))

	b := make([]byte, 0, len(prefix)+len(res.Text)+len(res.CardOutput)+len(restFields)+256)
	b = append(b, prefix...)
	b = append(b, `,"result":{"text":`...)
	b = wirejson.AppendString(b, res.Text)
	if res.IsError {
		b = append(b, `,"isError":true`...)
	}
	if res.Declined != "" {
		b = append(b, `,"declined":`...)
		b = wirejson.AppendString(b, res.Declined)
	}
	b = append(b, `,"cardOutput":`...)
	b = wirejson.AppendString(b, res.CardOutput)
	if len(restFields) > 0 {
		b = append(append(b, ','), restFields...)
	}
	return append(b, "}}\n"...), true, nil
}
