package tools

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/event"
)

// cardStream turns a run's output chunks into the card's live output: valid
// UTF-8 (a character split across chunks is carried to the stream's next
// chunk; invalid bytes become U+FFFD), otherwise raw, capped at limit bytes
// of output. It records exactly what it forwards, so the card a replay draws
// from the recorded text equals the live one.
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
	return &cardStream{out: out, limit: limit, carry: map[executor.Stream][]byte{}}
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
	c.emit(data[:n])
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
			c.emit(b)
			delete(c.carry, s)
		}
	}
	for s, b := range c.carry { // unknown stream values, if any
		c.emit(b)
		delete(c.carry, s)
	}
}

// emit forwards output bytes, up to the cap.
func (c *cardStream) emit(b []byte) {
	if len(b) == 0 {
		return
	}
	if c.capped {
		c.hidden += int64(len(b))
		return
	}
	room := c.limit - c.data
	if len(b) > room+utf8.UTFMax && utf8.Valid(b) {
		// At most room bytes can be shown: copy no more than those and
		// the character they may cut (a valid cut: past room, on a
		// character start).
		j := room + utf8.UTFMax
		for !utf8.RuneStart(b[j]) {
			j--
		}
		c.hidden += int64(len(b) - j)
		b = b[:j]
	}
	if utf8.Valid(b) {
		k := c.fit(len(b), room, func(i int) bool { return utf8.RuneStart(b[i]) })
		c.data += k
		c.grow(k)
		start := c.sent.Len()
		c.sent.Write(b[:k])
		c.forward(start)
		return
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD") // the rare path: a copy
	k := c.fit(len(s), room, func(i int) bool { return utf8.RuneStart(s[i]) })
	c.data += k
	c.send(s[:k])
}

// fit is how many of n bytes fit in room, cut on a character start (start
// reports one), counting the rest as hidden and capping the stream when
// they do not all fit.
func (c *cardStream) fit(n, room int, start func(int) bool) int {
	if n <= room {
		return n
	}
	k := room
	for k > 0 && !start(k) {
		k--
	}
	c.hidden += int64(n - k)
	c.capped = true
	return k
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
