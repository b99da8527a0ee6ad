package replay

import (
	"errors"
	"fmt"
	"syscall"
	"unicode/utf8"
)

// When a record's line cannot be written whole (a full disk), the journal
// writes it compact instead: the same record, numbered the same, whose large
// texts keep only their tails behind a line saying how many bytes were not
// saved and why. A tool result keeps what its call ended as — whether it
// was an error or declined, its task, its payload (bash's exit code,
// signal, markers) and the tail of its text, where the status markers are —
// so a reload shows the call as it ended. The compact line is at most
// compactLine bytes; a record that cannot be made that small (huge
// arguments or state) has no compact form.
const (
	// compactLine is the longest compact line.
	compactLine = 16 << 10
	// compactKeep is how much of each large text a compact record keeps
	// when that fits; otherwise it keeps none.
	compactKeep = 1 << 10
)

// compactLines encodes recs (numbered) in their compact forms, as one chunk,
// and how many of them were shortened; ok is false when one has no compact
// form. Called with mu held.
func (j *Journal) compactLines(recs []wireRecord, why string) (chunk []byte, cut int, ok bool) {
	for i := range recs {
		c, shortened, ok := j.compact(recs[i], why)
		if !ok {
			return nil, 0, false
		}
		line, err := j.enc.line(&c)
		if err != nil {
			return nil, 0, false
		}
		chunk = append(chunk, line...)
		if shortened {
			cut++
		}
	}
	return chunk, cut, true
}

// compact returns r in a form whose line is at most compactLine bytes:
// unchanged when it already is, else its texts cut to compactKeep bytes,
// else to nothing, else (a tool result) without its arguments, which its
// tool_call record holds too. Called with mu held.
func (j *Journal) compact(r wireRecord, why string) (c wireRecord, shortened, ok bool) {
	fits := func(c *wireRecord) bool {
		line, err := j.enc.line(c)
		return err == nil && len(line) <= compactLine
	}
	if !hasLongText(&r, compactKeep) && fits(&r) {
		return r, false, true
	}
	for _, keep := range []int{compactKeep, 0} {
		c = r
		cutTexts(&c, keep, why)
		if fits(&c) {
			return c, true, true
		}
	}
	if r.Type == typeToolResult {
		c.wireArgs = wireArgs{}
		if fits(&c) {
			return c, true, true
		}
	}
	return wireRecord{}, false, false
}

// hasLongText reports whether one of r's texts is longer than keep bytes.
func hasLongText(r *wireRecord, keep int) bool {
	if len(r.Text) > keep || len(r.Reasoning) > keep || r.TextZ != nil || r.textParts != nil {
		return true
	}
	if res := r.Result; res != nil {
		return len(res.Text) > keep || len(res.CardOutput) > keep || res.CardOutputZ != nil
	}
	return false
}

// cutTexts cuts every text of c to its last keep bytes (see cutTail),
// leaving the record's other fields, and a result it shares, alone.
func cutTexts(c *wireRecord, keep int, why string) {
	if c.textParts != nil || c.TextZ != nil {
		text := c.Text
		if c.textParts != nil {
			text = joinParts(c.textParts)
		} else {
			text = inflate(c.TextZ)
		}
		c.textParts, c.TextZ, c.Text = nil, nil, text
	}
	c.Text = cutTail(c.Text, keep, why)
	c.Reasoning = cutTail(c.Reasoning, keep, why)
	if c.Result != nil {
		res := *c.Result
		res.Text = cutTail(res.Text, keep, why)
		card := res.CardOutput
		if res.CardOutputZ != nil {
			card = inflate(res.CardOutputZ)
		}
		res.CardOutput, res.CardOutputZ = compactText(cutTail(card, keep, why))
		c.Result = &res
	}
}

func joinParts(parts []string) string {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	b := make([]byte, 0, n)
	for _, p := range parts {
		b = append(b, p...)
	}
	return string(b)
}

// cutTail keeps at most keep bytes of s, its end (from a line start when
// one is near, else from a character start), after a line saying how many
// bytes were not saved and why. A text that fits is returned as it is.
func cutTail(s string, keep int, why string) string {
	if len(s) <= keep {
		return s
	}
	start := len(s) - keep
	if nl := indexByteWithin(s[start:], '\n', keep/4); nl >= 0 {
		start += nl + 1
	}
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return fmt.Sprintf("[dsh-acp: %d bytes of this text were not saved (%s)]\n", start, why) + s[start:]
}

// whyNotWritten is the short reason a write failed ("no space left on
// device"): the system error's text when there is one.
func whyNotWritten(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}
