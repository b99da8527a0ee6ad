package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/wirejson"
)

// bigCard is the card output length past which a tool_result line is
// built from its parts: the card output (up to MaxCardOutput) is escaped
// straight from the string, never through encoding/json's buffer and
// then the encoder's.
const bigCard = 64 << 10

// keptLine is the largest line buffer an encoder keeps between records.
const keptLine = 256 << 10

// bigPiece is how much text at most is escaped into the scratch buffer
// before it is written, when a big line is streamed.
const bigPiece = 32 << 10

// bigLine is a record carrying a large text (a tool_result's card output,
// an output record's text) as its parts: JSON before the text, the text
// (one string or several, concatenated), JSON after it. The same bytes as
// the generic encoding, without a buffer of the line's size: the journal
// streams it to the file in pieces (Journal.writeBig).
type bigLine struct {
	head, tail []byte
	text       []string
}

// planBig returns the parts of a record that carries a large plain text,
// or ok false for one it does not take.
func (e *encoder) planBig(r *wireRecord) (l bigLine, ok bool, err error) {
	switch {
	case !isBig(r):
		return bigLine{}, false, nil
	case r.Type == typeOutput:
		return e.planOutput(r)
	default:
		return e.planResult(r)
	}
}

// isBig reports whether a record carries a large plain text planBig
// takes: an output record's text, or a tool_result's card output.
func isBig(r *wireRecord) bool {
	if r.Type == typeOutput {
		return r.TextZ == nil && (len(r.Text) >= bigCard || r.textParts != nil)
	}
	res := r.Result
	return r.Type == typeToolResult && res != nil && len(res.CardOutput) >= bigCard && res.v1Result == (v1Result{})
}

// planOutput: an output record's text is its last field.
func (e *encoder) planOutput(r *wireRecord) (bigLine, bool, error) {
	head := wireRecord{V: r.V, Seq: r.Seq, T: r.T, Type: r.Type, ID: r.ID}
	e.buf.Reset()
	if err := e.enc.Encode(&head); err != nil {
		return bigLine{}, true, err
	}
	prefix := bytes.TrimSuffix(e.buf.Bytes(), []byte("}\n"))
	l := bigLine{head: append(append([]byte(nil), prefix...), `,"text":`...), tail: []byte("}\n"), text: r.textParts}
	if l.text == nil {
		l.text = []string{r.Text}
	}
	return l, true, nil
}

// planResult: a tool_result record whose card output is plain text.
func (e *encoder) planResult(r *wireRecord) (bigLine, bool, error) {
	res := r.Result
	// The record without its result ends the line with "}\n"; a
	// tool_result has no field after its result.
	head := *r
	head.Result = nil
	e.buf.Reset()
	if err := e.enc.Encode(&head); err != nil {
		return bigLine{}, true, err
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
		return bigLine{}, true, err
	}
	restFields := bytes.TrimSuffix(bytes.TrimPrefix(rest.Bytes(), []byte("{")), []byte("}\n"))

	b := make([]byte, 0, len(prefix)+len(res.Text)+256)
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
	t := make([]byte, 0, len(restFields)+4)
	if len(restFields) > 0 {
		t = append(append(t, ','), restFields...)
	}
	return bigLine{head: b, tail: append(t, "}}\n"...), text: []string{res.CardOutput}}, true, nil
}

// size is the line's length in bytes.
func (l *bigLine) size() int {
	n := len(l.head) + len(l.tail) + 2 // the text's quotes
	var t textPieces
	t.reset(l.text)
	for {
		p, ok := t.next()
		if !ok {
			return n
		}
		n += quotedLen(p)
	}
}

// bytes is the whole line in one buffer.
func (l *bigLine) bytes() []byte {
	b := make([]byte, 0, l.size())
	b = append(append(b, l.head...), '"')
	var t textPieces
	t.reset(l.text)
	for {
		p, ok := t.next()
		if !ok {
			break
		}
		b = appendQuoted(b, p)
	}
	return append(append(b, '"'), l.tail...)
}

// writeTo writes the line to w in pieces of at most about bigPiece
// escaped bytes, through scratch (reused; returned grown). n counts the
// bytes written, also on an error.
func (l *bigLine) writeTo(w io.Writer, scratch []byte) (n int, buf []byte, err error) {
	write := func(b []byte) bool {
		k, werr := w.Write(b)
		n += k
		if werr == nil && k < len(b) {
			werr = io.ErrShortWrite
		}
		err = werr
		return err == nil
	}
	buf = append(append(scratch[:0], l.head...), '"')
	var t textPieces
	t.reset(l.text)
	for {
		p, ok := t.next()
		if !ok {
			break
		}
		buf = appendQuoted(buf, p)
		if len(buf) >= bigPiece {
			if !write(buf) {
				return n, buf, err
			}
			buf = buf[:0]
		}
	}
	buf = append(append(buf, '"'), l.tail...)
	write(buf)
	return n, buf, err
}

// textPieces cuts the concatenation of parts into pieces of at most about
// bigPiece bytes, each ending where a character of the whole ends (one
// split across parts is gathered into a small piece of its own), so
// escaping the pieces one by one writes what escaping the whole would.
type textPieces struct {
	parts []string // what is left; parts[0] from off
	off   int
	carry []byte
}

func (t *textPieces) reset(parts []string) { *t = textPieces{parts: parts} }

func (t *textPieces) skipDone() {
	for len(t.parts) > 0 && t.off == len(t.parts[0]) {
		t.parts, t.off = t.parts[1:], 0
	}
}

// next returns the next piece; ok is false at the end. A piece is valid
// until the next call.
func (t *textPieces) next() (p string, ok bool) {
	t.skipDone()
	if len(t.parts) == 0 {
		return "", false
	}
	s := t.parts[0][t.off:]
	if len(s) > bigPiece {
		// Cut before a character's first byte; four continuation bytes
		// in a row end no character, so a cut after them is safe too.
		k := bigPiece
		for i := bigPiece; i > bigPiece-utf8.UTFMax; i-- {
			if utf8.RuneStart(s[i]) {
				k = i
				break
			}
		}
		t.off += k
		return s[:k], true
	}
	k := len(s)
	if i := incompleteTail(s); i >= 0 && t.continued() {
		k = i // the character goes on in the next part
	}
	if k > 0 {
		t.off += k
		return s[:k], true
	}
	// s is the start of a character the next parts go on with: gather
	// it, at most UTFMax bytes.
	t.carry = append(t.carry[:0], s...)
	t.off += len(s)
	for len(t.carry) < utf8.UTFMax {
		t.skipDone()
		if len(t.parts) == 0 || utf8.RuneStart(t.parts[0][t.off]) {
			break
		}
		t.carry = append(t.carry, t.parts[0][t.off])
		t.off++
	}
	return string(t.carry), true
}

// continued reports whether the first byte after parts[0] continues a
// character (a UTF-8 continuation byte).
func (t *textPieces) continued() bool {
	for _, q := range t.parts[1:] {
		if q != "" {
			return !utf8.RuneStart(q[0])
		}
	}
	return false
}

// incompleteTail is where a trailing, so far incomplete, character of s
// starts (which what follows s may complete), or -1.
func incompleteTail(s string) int {
	for i := len(s) - 1; i >= 0 && i > len(s)-utf8.UTFMax; i-- {
		if !utf8.RuneStart(s[i]) {
			continue
		}
		if utf8.FullRuneInString(s[i:]) {
			return -1
		}
		return i
	}
	return -1
}

// appendQuoted appends s escaped as inside a JSON string, without quotes.
func appendQuoted(b []byte, s string) []byte {
	n := len(b)
	b = wirejson.AppendString(b, s)
	copy(b[n:], b[n+1:len(b)-1])
	return b[:len(b)-2]
}

// quotedLen is len(appendQuoted(nil, s)) without building it.
func quotedLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			case c < 0x20:
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// writeBig writes a record that carries a large plain text straight from
// its parts, in pieces, when no backlog waits; handled is false for any
// other record (the caller encodes it whole). A failed write cuts the
// partial line away and falls back as writeOne does (compact, else kept). Called with mu held, the record's v, seq and t set.
func (j *Journal) writeBig(r *wireRecord, sync bool) (handled bool, err error) {
	if len(j.backlog) > 0 {
		return false, nil
	}
	l, ok, err := j.enc.planBig(r)
	if !ok {
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("append to journal %s: encode %s record: %w", j.id, r.Type, err)
	}
	size := l.size()
	if size > j.enc.max {
		return true, fmt.Errorf("append to journal %s: %w: %s record of %d bytes (max %d)", j.id, ErrTooLarge, r.Type, size, j.enc.max)
	}
	n, scratch, err := l.writeTo(writeFunc(j.writeFile), j.enc.scratch)
	if cap(scratch) <= keptLine {
		j.enc.scratch = scratch[:0]
	}
	if err != nil {
		if n > 0 {
			if terr := j.f.Truncate(j.size); terr != nil {
				j.broken = fmt.Errorf("journal %s holds a partial record: %w", j.id, errors.Join(err, terr))
			}
		}
		return true, j.fallback([]wireRecord{*r}, size, err, sync)
	}
	j.size += int64(n)
	j.wrote(1, sync)
	return true, nil
}

// writeFunc is a function as an io.Writer.
type writeFunc func([]byte) (int, error)

func (f writeFunc) Write(b []byte) (int, error) { return f(b) }
