package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// Version is the journal format version this package writes. Readers also
// read version 1 (see v1Result) and skip records with a newer version, with
// a warning.
const Version = 2

const (
	// MaxLine is the longest record, newline included, that Append writes
	// and readers accept. Longer lines are refused (ErrTooLarge) and, when
	// found in a file, skipped with a warning.
	MaxLine = 64 << 20

	// MaxCardOutput caps the card output (event.Result.CardOutput) that a
	// tool_result record keeps: event.MaxCardOutput, the cap the tools
	// apply live, so a replayed card shows exactly what the live one did.
	// Longer output (a journal written by a tool that did not cap) keeps
	// its tail, after a line saying how many bytes were dropped.
	MaxCardOutput = event.MaxCardOutput
)

// Record types, the "type" field of a line.
const (
	typeSession    = "session"
	typeUserPrompt = "user_prompt"
	typeAssistant  = "assistant"
	typeToolCall   = "tool_call"
	typeToolResult = "tool_result"
	typeDecision   = "decision"
	typeOutput     = "output"
	typeNotice     = "notice"
	typeError      = "error"
	typeTurnEnd    = "turn_end"
	typeState      = "state"

	typeUsage        = "usage"
	typeCompaction   = "compaction"
	typeCommand      = "command"
	typeInfo         = "info"
	typeInstructions = "instructions"
	typeFileChanges  = "file_changes"
)

// Header is a session's first record.
type Header struct {
	ID            string
	Cwd           string
	Created       time.Time
	DaemonVersion string
}

// State is a "state" record: a named piece of session state (the session
// mode, always-allow rules, …). The latest record for a key wins.
type State struct {
	Key   string
	Value json.RawMessage
}

// Record is one decoded journal record: exactly one of Header, Event and
// State is set.
type Record struct {
	Seq    uint64
	Time   time.Time
	Header *Header
	Event  event.Event
	State  *State
}

// wireArgs holds tool-call arguments so that any bytes round-trip exactly:
// Args for valid compact JSON, ArgsText for other UTF-8, ArgsBytes (base64)
// for anything else.
type wireArgs struct {
	Args      json.RawMessage `json:"args,omitempty"`
	ArgsText  *string         `json:"argsText,omitempty"`
	ArgsBytes []byte          `json:"argsBytes,omitempty"`
}

type wireCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	wireArgs
}

// wireRecord is the union of every record type's fields, so each line is
// decoded once.
type wireRecord struct {
	V    int       `json:"v"`
	Seq  uint64    `json:"seq"`
	T    time.Time `json:"t"`
	Type string    `json:"type"`

	ID            string    `json:"id,omitempty"`
	Cwd           string    `json:"cwd,omitempty"`
	Created       time.Time `json:"created,omitzero"`
	DaemonVersion string    `json:"daemonVersion,omitempty"`

	Text string `json:"text,omitempty"`
	// TextZ is an output record's text, deflated and base64-encoded, when
	// JSON escaping would blow it up (see compactText).
	TextZ []byte `json:"textZ,omitempty"`
	// textParts, when set, is an output record's text as the pieces it
	// arrived in (Text is empty): the line is written from them (see
	// bigLine), never joined.
	textParts []string
	Reasoning string     `json:"reasoning,omitempty"`
	ToolCalls []wireCall `json:"toolCalls,omitempty"`

	Name string `json:"name,omitempty"`
	wireArgs
	Direct  bool        `json:"direct,omitempty"`
	Pending bool        `json:"pending,omitempty"`
	Result  *wireResult `json:"result,omitempty"`

	Subject string `json:"subject,omitempty"`
	Verdict string `json:"verdict,omitempty"`
	Outcome string `json:"outcome,omitempty"`
	Reason  string `json:"reason,omitempty"`

	StopReason event.StopReason `json:"stopReason,omitempty"`

	Key   string          `json:"key,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`

	Usage        *event.Usage        `json:"usage,omitempty"`
	Compaction   *event.Compaction   `json:"compaction,omitempty"`
	Instructions *event.Instructions `json:"instructions,omitempty"`
	Changes      *event.FileChanges  `json:"changes,omitempty"`
}

func encodeArgs(raw json.RawMessage) wireArgs {
	switch {
	case len(raw) == 0:
		return wireArgs{}
	case !utf8.Valid(raw):
		return wireArgs{ArgsBytes: raw}
	case isCompactJSON(raw):
		return wireArgs{Args: raw}
	default:
		s := string(raw)
		return wireArgs{ArgsText: &s}
	}
}

// isCompactJSON reports whether raw is valid JSON that the encoder copies
// byte for byte (no insignificant whitespace).
func isCompactJSON(raw []byte) bool {
	var buf bytes.Buffer
	buf.Grow(len(raw))
	if err := json.Compact(&buf, raw); err != nil {
		return false
	}
	return bytes.Equal(buf.Bytes(), raw)
}

func (w wireArgs) raw() json.RawMessage {
	switch {
	case w.ArgsBytes != nil:
		return json.RawMessage(w.ArgsBytes)
	case w.ArgsText != nil:
		return json.RawMessage(*w.ArgsText)
	default:
		return w.Args
	}
}

// fromEvent fills r's type and payload from ev. It reports false for the
// streaming-only events, which are not journaled.
func fromEvent(ev event.Event, r *wireRecord) (bool, error) {
	switch e := ev.(type) {
	case event.UserPrompt:
		r.Type, r.Text = typeUserPrompt, e.Text
	case event.AssistantMessage:
		r.Type, r.Text, r.Reasoning = typeAssistant, e.Text, e.Reasoning
		if len(e.ToolCalls) > 0 {
			r.ToolCalls = make([]wireCall, len(e.ToolCalls))
			for i, c := range e.ToolCalls {
				r.ToolCalls[i] = wireCall{ID: c.ID, Name: c.Name, wireArgs: encodeArgs(c.Args)}
			}
		}
	case event.ToolCall:
		r.Type, r.ID, r.Name, r.wireArgs, r.Direct, r.Pending = typeToolCall, e.ID, e.Name, encodeArgs(e.Args), e.Direct, e.Pending
	case event.ToolResult:
		r.Type, r.ID, r.Name, r.wireArgs, r.Result = typeToolResult, e.ID, e.Name, encodeArgs(e.Args), encodeResult(e.Result)
	case event.OutputCheckpoint:
		r.Type, r.ID = typeOutput, e.ID
		if e.Parts != nil {
			r.Text, r.textParts, r.TextZ = compactParts(e.Parts)
		} else {
			r.Text, r.TextZ = compactText(e.Data)
		}
	case event.Decision:
		r.Type, r.ID, r.Subject, r.Verdict, r.Outcome, r.Reason = typeDecision, e.ID, e.Subject, e.Verdict, e.Outcome, e.Reason
	case event.Notice:
		r.Type, r.Text = typeNotice, e.Text
	case event.ErrorMessage:
		r.Type, r.Text = typeError, e.Text
	case event.TurnEnd:
		r.Type, r.StopReason = typeTurnEnd, e.StopReason
	case event.Usage:
		r.Type, r.Usage = typeUsage, &e
	case event.Compaction:
		r.Type, r.Compaction = typeCompaction, &e
	case event.Command:
		r.Type, r.Text = typeCommand, e.Text
	case event.Info:
		r.Type, r.Text = typeInfo, e.Text
	case event.Instructions:
		r.Type, r.Instructions = typeInstructions, &e
	case event.FileChanges:
		r.Type, r.Changes = typeFileChanges, &e
	case event.TextDelta, event.ThoughtDelta, event.ToolOutput:
		return false, nil
	default:
		return false, fmt.Errorf("%w: %T", ErrUnknownEvent, ev)
	}
	return true, nil
}

// toEvent returns the event an event record holds; ok is false for a type
// that is not an event.
func (r *wireRecord) toEvent() (ev event.Event, ok bool) {
	switch r.Type {
	case typeUserPrompt:
		return event.UserPrompt{Text: r.Text}, true
	case typeAssistant:
		m := event.AssistantMessage{Text: r.Text, Reasoning: r.Reasoning}
		if len(r.ToolCalls) > 0 {
			m.ToolCalls = make([]event.CallInfo, len(r.ToolCalls))
			for i, c := range r.ToolCalls {
				m.ToolCalls[i] = event.CallInfo{ID: c.ID, Name: c.Name, Args: c.raw()}
			}
		}
		return m, true
	case typeToolCall:
		return event.ToolCall{ID: r.ID, Name: r.Name, Args: r.raw(), Direct: r.Direct, Pending: r.Pending}, true
	case typeToolResult:
		var res event.Result
		if r.Result != nil {
			res = r.Result.decode(r.V)
		}
		return event.ToolResult{ID: r.ID, Name: r.Name, Args: r.raw(), Result: res}, true
	case typeOutput:
		data := r.Text
		if r.TextZ != nil {
			data = inflate(r.TextZ)
		}
		return event.OutputCheckpoint{ID: r.ID, Data: data}, true
	case typeDecision:
		return event.Decision{ID: r.ID, Subject: r.Subject, Verdict: r.Verdict, Outcome: r.Outcome, Reason: r.Reason}, true
	case typeNotice:
		return event.Notice{Text: r.Text}, true
	case typeError:
		return event.ErrorMessage{Text: r.Text}, true
	case typeTurnEnd:
		return event.TurnEnd{StopReason: r.StopReason}, true
	case typeUsage:
		if r.Usage != nil {
			return *r.Usage, true
		}
	case typeCompaction:
		if r.Compaction != nil {
			return *r.Compaction, true
		}
	case typeCommand:
		return event.Command{Text: r.Text}, true
	case typeInfo:
		return event.Info{Text: r.Text}, true
	case typeInstructions:
		if r.Instructions != nil {
			return *r.Instructions, true
		}
	case typeFileChanges:
		if r.Changes != nil {
			return *r.Changes, true
		}
	}
	return nil, false
}

// capCardOutput keeps at most MaxCardOutput bytes of s: its tail, starting
// on a line (or at least a UTF-8) boundary, after a line saying how much
// was dropped.
func capCardOutput(s string) string {
	if len(s) <= MaxCardOutput {
		return s
	}
	const room = 64 // for the marker line
	cut := len(s) - (MaxCardOutput - room)
	if nl := indexByteWithin(s[cut:], '\n', 4096); nl >= 0 {
		cut += nl + 1
	}
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return fmt.Sprintf("[%d bytes of earlier output not journaled]\n", cut) + s[cut:]
}

func indexByteWithin(s string, c byte, n int) int {
	if len(s) > n {
		s = s[:n]
	}
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// encoder turns records into lines. Not safe for concurrent use.
type encoder struct {
	buf     bytes.Buffer
	enc     *json.Encoder
	max     int    // longest line, newline included
	scratch []byte // a streamed line's pieces (Journal.writeBig)
}

func newEncoder() *encoder {
	e := &encoder{max: MaxLine}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}

// line encodes r as one line, trailing newline included. The slice is valid
// until the next call.
// owns reports whether line, just returned by line, is the encoder's own
// buffer (overwritten by the next record) rather than one of its own.
func (e *encoder) owns(line []byte) bool {
	b := e.buf.Bytes()
	return len(line) > 0 && len(b) > 0 && &line[0] == &b[0]
}

func (e *encoder) line(r *wireRecord) ([]byte, error) {
	if e.buf.Cap() > keptLine {
		e.buf = bytes.Buffer{} // do not pin one huge record's buffer
	}
	var line []byte
	big, ok, err := e.planBig(r)
	switch {
	case ok && err == nil:
		line = big.bytes()
	case !ok:
		e.buf.Reset()
		err = e.enc.Encode(r)
		line = e.buf.Bytes()
	}
	if err != nil {
		return nil, fmt.Errorf("encode %s record: %w", r.Type, err)
	}
	if len(line) > e.max {
		return nil, fmt.Errorf("%w: %s record of %d bytes (max %d)", ErrTooLarge, r.Type, len(line), e.max)
	}
	return line, nil
}
