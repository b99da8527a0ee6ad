package tools

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/event"
)

// cardStream turns a run's output chunks into the card's live output: valid
// UTF-8 (a character split across chunks is carried to the stream's next
// chunk; invalid bytes become U+FFFD), without terminal string sequences
// (OSC, DCS, …: see stringFilter; colours stay), otherwise raw, capped at
// limit bytes of output. It records exactly what it forwards, so the card a
// replay draws from the recorded text equals the live one. Past the cap it
// only counts (the end of the output is the executor's Combined tail: see
// cardTail).
type cardStream struct {
	mu    sync.Mutex
	out   func(string) // may be nil
	limit int
	// sent is everything forwarded, in one append-only buffer; each piece
	// handed to out is a view of it (a strings.Builder never changes what
	// it has written), so a forwarded byte is copied once.
	sent   strings.Builder
	data   int // output bytes forwarded (notices excluded)
	carry  map[executor.Stream][]byte
	esc    map[executor.Stream]*stringFilter
	hidden int64 // bytes past the cap
	capped bool
	closed bool
	seen   bool // a chunk arrived
}

// cardNoticeRoom is what a card's output leaves of event.MaxCardOutput for
// its notices (the not-shown line with the full output's path, a dropped
// line or two), so the whole card fits in what the journal keeps: a
// reloaded card is the live one, and journaling it copies nothing.
const cardNoticeRoom = 4 << 10

func newCardStream(limit int, out func(string)) *cardStream {
	limit = min(limit, event.MaxCardOutput-cardNoticeRoom)
	return &cardStream{out: out, limit: limit, carry: map[executor.Stream][]byte{},
		esc: map[executor.Stream]*stringFilter{}}
}

// observe takes one chunk. It is an executor.Run observer; chunks arriving
// after close are ignored.
func (c *cardStream) observe(ch executor.Chunk) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.seen = true
	if ch.Dropped > 0 {
		c.flushCarries()
		for _, f := range c.esc {
			f.reset()
		}
		if c.capped {
			c.hidden += ch.Dropped
		} else {
			c.line(fmt.Sprintf("[… %d bytes dropped]", ch.Dropped))
		}
	}
	if len(ch.Data) == 0 {
		return
	}
	if c.capped { // past the cap: count, never copy
		c.hidden += int64(len(ch.Data))
		return
	}
	data := ch.Data
	carry := c.carry[ch.Stream]
	if len(carry) > 0 {
		data = append(carry, data...)
	}
	n := completeLen(data)
	c.emit(ch.Stream, data[:n])
	if n == len(data) {
		delete(c.carry, ch.Stream)
		return
	}
	c.carry[ch.Stream] = append([]byte(nil), data[n:]...) // at most 3 bytes
}

// close flushes what is pending, adds the not-shown notice (naming the
// full-output file when there is one, or why it could not be saved) if the
// cap was hit, and returns everything forwarded: the result's CardOutput.
func (c *cardStream) close(spillPath, spillErr string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.flushCarries()
		switch {
		case c.hidden > 0 && (spillPath != "" || spillErr != ""):
			c.line(fmt.Sprintf("[… %d bytes not shown; %s]", c.hidden, fullOutput(spillPath)))
			if r := spillReason(spillPath, spillErr); r != "" {
				c.line(r)
			}
		case c.hidden > 0:
			c.line(fmt.Sprintf("[… %d bytes not shown]", c.hidden))
		}
		c.closed = true
	}
	return c.sent.String()
}

func (c *cardStream) sawOutput() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen
}

// flushCarries emits incomplete characters held back from earlier chunks:
// the bytes that would complete them are not coming.
func (c *cardStream) flushCarries() {
	for _, s := range []executor.Stream{executor.Stdout, executor.Stderr} {
		if b := c.carry[s]; len(b) > 0 {
			c.emit(s, b)
			delete(c.carry, s)
		}
	}
	for s, b := range c.carry { // unknown stream values, if any
		c.emit(s, b)
		delete(c.carry, s)
	}
}

// total is how many output bytes the stream saw (shown or past the cap),
// and whether the cap hid some of them. Valid after close.
func (c *cardStream) total() (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return int64(c.data) + c.hidden, c.hidden > 0
}

// hide counts b as past the cap.
func (c *cardStream) hide(b []byte) { c.hidden += int64(len(b)) }

// emit forwards output bytes of stream st, up to the cap: as valid UTF-8,
// string sequences removed.
func (c *cardStream) emit(st executor.Stream, b []byte) {
	if len(b) == 0 {
		return
	}
	if c.capped {
		c.hide(b)
		return
	}
	room := c.limit - c.data
	var rest []byte
	if len(b) > room+utf8.UTFMax && utf8.Valid(b) {
		// At most room bytes can be shown: copy no more than those and
		// the character they may cut (a valid cut: past room, on a
		// character start).
		j := room + utf8.UTFMax
		for !utf8.RuneStart(b[j]) {
			j--
		}
		b, rest = b[:j], b[j:]
	}
	if !utf8.Valid(b) {
		b = []byte(strings.ToValidUTF8(string(b), "\uFFFD")) // the rare path: a copy
	}
	b = c.filter(st).filter(b)
	k := len(b)
	if k > room || rest != nil {
		k = room
		for k > 0 && k < len(b) && !utf8.RuneStart(b[k]) {
			k--
		}
		k = min(k, len(b))
		c.capped = true
	}
	c.data += k
	c.grow(k)
	start := c.sent.Len()
	c.sent.Write(b[:k])
	c.forward(start)
	if c.capped {
		c.hide(b[k:])
		c.hide(rest)
	}
}

// filter is stream st's string-sequence filter.
func (c *cardStream) filter(st executor.Stream) *stringFilter {
	f := c.esc[st]
	if f == nil {
		f = &stringFilter{}
		c.esc[st] = f
	}
	return f
}

// line forwards a notice on a line of its own.
func (c *cardStream) line(text string) {
	if n := c.sent.Len(); n > 0 && c.sent.String()[n-1] != '\n' {
		text = "\n" + text
	}
	c.send(text + "\n")
}

func (c *cardStream) send(s string) {
	c.grow(len(s))
	start := c.sent.Len()
	c.sent.WriteString(s)
	c.forward(start)
}

// forward hands what was written to sent since start to out, as a view.
func (c *cardStream) forward(start int) {
	if c.sent.Len() > start && c.out != nil {
		c.out(c.sent.String()[start:])
	}
}

// grow makes room for n more bytes: once the output passes 64 KiB, room
// for the whole cap at once, so the buffer is not copied again on its way
// there.
func (c *cardStream) grow(n int) {
	need := c.sent.Len() + n
	if need <= c.sent.Cap() || need <= 64<<10 {
		return
	}
	c.sent.Grow(max(n, c.limit+4096-c.sent.Len()))
}

// completeLen is the length of b without a trailing incomplete (but so far
// valid) multi-byte character, which the next chunk may complete.
func completeLen(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax+1; i-- {
		if !utf8.RuneStart(b[i]) {
			continue
		}
		if utf8.FullRune(b[i:]) {
			return len(b)
		}
		return i
	}
	return len(b)
}

// cardTailBytes bounds the tail a capped card keeps of the output: about
// what the model reads of an output (DefaultOutputLimit characters), so a
// card that shows the end shows what the model saw.
const cardTailBytes = 32 << 10

// cardTail is the end of an output that went past the card's cap: the last
// cardTailBytes of combined (the executor's tail of both streams, in
// arrival order) from a line start (what comes before continues a line the
// reader does not see whole), else from a character start, as valid UTF-8;
// cut is total (the output's bytes) less the bytes kept.
func cardTail(combined []byte, total int64) (tail string, cut int64) {
	b := combined[max(len(combined)-cardTailBytes, 0):]
	if i := bytes.IndexByte(b, '\n'); i >= 0 && i+1 < len(b) && (len(b) < len(combined) || int64(len(b)) < total) {
		b = b[i+1:]
	} else {
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), max(total-int64(len(b)), 0)
}
