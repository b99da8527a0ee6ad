package replay

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// wireResult is a tool_result record's result. Version 2 writes the
// tool-agnostic event.Result; the card output is kept as a JSON string
// when that costs little, else deflated and base64-encoded under
// cardOutputZ (a card of NUL bytes would otherwise take six bytes per byte
// as \u0000). Version 1 records held bash's fields flat, beside the text;
// decode turns them into the payload bash reads today.
type wireResult struct {
	Text        string          `json:"text"`
	IsError     bool            `json:"isError,omitempty"`
	Declined    string          `json:"declined,omitempty"`
	CardOutput  string          `json:"cardOutput,omitempty"`
	CardOutputZ []byte          `json:"cardOutputZ,omitempty"`
	Task        *event.Task     `json:"task,omitempty"`
	Payload     json.RawMessage `json:"payload,omitempty"`

	v1Result
}

// v1Result is the part of a version 1 result that version 2 moved into
// the payload and Task. Its field names are the bash payload's.
type v1Result struct {
	ExitCode   *int   `json:"exitCode,omitempty"`
	Signal     string `json:"signal,omitempty"`
	TimedOut   bool   `json:"timedOut,omitempty"`
	TimeoutMs  int64  `json:"timeoutMs,omitempty"`
	SpillPath  string `json:"spillPath,omitempty"`
	Truncated  bool   `json:"truncated,omitempty"`
	TaskID     string `json:"taskId,omitempty"`
	TaskStatus string `json:"taskStatus,omitempty"`
}

// v1Payload is the bash payload a version 1 result's fields make.
type v1Payload struct {
	ExitCode  *int   `json:"exitCode,omitempty"`
	Signal    string `json:"signal,omitempty"`
	TimedOut  bool   `json:"timedOut,omitempty"`
	TimeoutMs int64  `json:"timeoutMs,omitempty"`
	SpillPath string `json:"spillPath,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
}

func encodeResult(r event.Result) *wireResult {
	w := &wireResult{Text: r.Text, IsError: r.IsError, Declined: r.Declined, Task: r.Task, Payload: r.Payload}
	w.CardOutput, w.CardOutputZ = compactText(capCardOutput(r.CardOutput))
	return w
}

// compactText is s as a JSON string when that costs little, else (nil
// error) deflated: the first result or the second is set.
func compactText(s string) (string, []byte) {
	if escapeCost(s) > len(s)/10 {
		if z, err := deflate(s); err == nil {
			return "", z
		}
	}
	return s, nil
}

// compactParts is compactText for a text given as parts: the parts
// themselves (never joined) when they are plain and large (bigCard), the
// joined text when small, else deflated.
func compactParts(parts []string) (text string, plain []string, z []byte) {
	n, cost := 0, 0
	for _, p := range parts {
		n += len(p)
		cost += escapeCost(p)
	}
	if cost > n/10 {
		if z, err := deflateParts(parts); err == nil {
			return "", nil, z
		}
	}
	if n < bigCard {
		return strings.Join(parts, ""), nil, nil
	}
	return "", parts, nil
}

// decode is the event.Result a record of version v holds.
func (w *wireResult) decode(v int) event.Result {
	r := event.Result{Text: w.Text, IsError: w.IsError, Declined: w.Declined, CardOutput: w.CardOutput,
		Task: w.Task, Payload: w.Payload}
	if w.CardOutputZ != nil {
		r.CardOutput = inflate(w.CardOutputZ)
	}
	if v >= 2 {
		return r
	}
	old := w.v1Result
	if old.TaskID != "" {
		r.Task = &event.Task{ID: old.TaskID, Status: old.TaskStatus}
	}
	p := v1Payload{ExitCode: old.ExitCode, Signal: old.Signal, TimedOut: old.TimedOut,
		TimeoutMs: old.TimeoutMs, SpillPath: old.SpillPath, Truncated: old.Truncated}
	if p != (v1Payload{}) {
		r.Payload, _ = json.Marshal(p) // plain fields always encode
	}
	return r
}

// escapeCost is how many bytes JSON escaping adds to s (beyond the quotes):
// five for each control byte written as \u00XX, one for a quote, a
// backslash or a short escape, and the replacement of invalid UTF-8.
func escapeCost(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
				n++
			case c < 0x20:
				n += 5
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			n += 5
		}
		i += size
	}
	return n
}

func deflate(s string) ([]byte, error) { return deflateParts([]string{s}) }

// deflateParts deflates the concatenation of parts.
func deflateParts(parts []string) ([]byte, error) {
	var b bytes.Buffer
	zw, err := flate.NewWriter(&b, flate.BestSpeed)
	if err != nil {
		return nil, err
	}
	for _, p := range parts {
		if _, err := io.Copy(zw, strings.NewReader(p)); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// inflate undoes deflate; a corrupt stream keeps what decoded, after a
// line that says the rest was unreadable.
func inflate(z []byte) string {
	out, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(z)), MaxCardOutput+1))
	if err != nil {
		return string(out) + "\n[card output: the rest is unreadable in the journal]\n"
	}
	return string(out)
}
