package tools

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// stringFilter removes terminal string sequences from one output stream on
// its way to a terminal card: OSC (ESC ] or U+009D: titles, OSC 8
// hyperlinks, OSC 52 clipboard writes, palette changes), DCS (ESC P or
// U+0090, which also carries tmux's passthrough), SOS (ESC X, U+0098), PM
// (ESC ^, U+009E) and APC (ESC _, U+009F). Everything else goes through:
// colours and the other CSI sequences draw the output, and the model reads
// its own cleaned text (CleanTerminalText) either way.
//
// A sequence ends where a terminal ends it: BEL, ST (ESC \ or U+009C), CAN
// or SUB, or an ESC that starts another sequence. One split across chunks
// is removed whole: the filter keeps its state between calls, and holds
// back an ESC that ends a chunk until the next byte says what it starts.
//
// What is removed can never make what is left start a sequence: the input
// is valid UTF-8 (so removing whole characters cannot join two bytes into
// a C1 character), and an ESC is passed on only with the printable ASCII
// byte after it, so no ESC is left waiting for a byte that follows a
// removed sequence. An ESC followed by anything else (another ESC, a
// control, a non-ASCII character) is dropped: a terminal does nothing with
// it either.
type stringFilter struct {
	inString bool // inside a string sequence
	heldESC  bool // the previous chunk ended with an ESC, not yet passed on
}

// filter returns b without string sequences (see stringFilter); b must be
// valid UTF-8. It returns b itself, uncopied, when it holds nothing to
// remove and no sequence is open.
func (f *stringFilter) filter(b []byte) []byte {
	if !f.inString && !f.heldESC && passes(b) {
		return b
	}
	return f.strip(b)
}

// strip is filter without its fast path: it always copies.
func (f *stringFilter) strip(b []byte) []byte {
	if f.heldESC {
		b = append([]byte{0x1b}, b...)
		f.heldESC = false
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		if f.inString {
			i += f.skipString(b[i:])
			continue
		}
		switch c := b[i]; {
		case c == 0x1b && i+1 == len(b):
			f.heldESC = true
			i++
		case c == 0x1b && isStringIntroducer(b[i+1]):
			f.inString = true
			i += 2
		case c == 0x1b && b[i+1] == '\\':
			i += 2 // a stray ST: nothing to end
		case c == 0x1b && b[i+1] >= 0x20 && b[i+1] <= 0x7e:
			out = append(out, c, b[i+1])
			i += 2
		case c == 0x1b:
			i++ // an ESC a terminal ignores
		case c == 0xc2 && i+1 < len(b) && isC1String(b[i+1]):
			f.inString = true
			i += 2
		default:
			out = append(out, c)
			i++
		}
	}
	return out
}

// skipString consumes the string sequence's bytes at the start of b, up to
// and including its terminator, and returns how many it consumed. An ESC
// that does not make ST ends the sequence unconsumed: it starts the next.
func (f *stringFilter) skipString(b []byte) int {
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case 0x07, 0x18, 0x1a: // BEL, CAN, SUB
			f.inString = false
			return i + 1
		case 0x1b:
			switch {
			case i+1 == len(b):
				f.heldESC = true // ST or the next sequence: the next chunk says
				return i + 1
			case b[i+1] == '\\':
				f.inString = false
				return i + 2
			}
			f.inString = false
			return i
		case 0xc2:
			if i+1 < len(b) && b[i+1] == 0x9c { // U+009C, ST
				f.inString = false
				return i + 2
			}
		}
	}
	return len(b)
}

// reset forgets an open sequence and a held ESC: bytes of the stream were
// lost, so what follows cannot continue what came before.
func (f *stringFilter) reset() { *f = stringFilter{} }

// passes reports whether the filter would return b unchanged from its
// ground state: every ESC in it is followed by a printable byte that starts
// no string sequence and is not ST's, and no C1 string introducer is in it
// (colours and other CSI sequences take this path, uncopied).
func passes(b []byte) bool {
	for rest := b; ; {
		i := bytes.IndexByte(rest, 0x1b)
		if i < 0 {
			break
		}
		if i+1 == len(rest) {
			return false
		}
		c := rest[i+1]
		if c < 0x20 || c > 0x7e || c == '\\' || isStringIntroducer(c) {
			return false
		}
		rest = rest[i+2:]
	}
	return !hasC1String(b)
}

// isStringIntroducer reports whether ESC c starts a string sequence.
func isStringIntroducer(c byte) bool {
	return c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_'
}

// isC1String reports whether 0xc2 c is the UTF-8 form of a C1 control that
// starts a string sequence (U+0090, U+0098, U+009D, U+009E, U+009F).
func isC1String(c byte) bool {
	return c == 0x90 || c == 0x98 || c == 0x9d || c == 0x9e || c == 0x9f
}

// hasC1String reports whether b holds a C1 string introducer.
func hasC1String(b []byte) bool {
	for {
		i := bytes.IndexByte(b, 0xc2)
		if i < 0 || i+1 >= len(b) {
			return false
		}
		if isC1String(b[i+1]) {
			return true
		}
		b = b[i+1:]
	}
}

// StripStringSequences is s without terminal string sequences, as a card
// stream removes them (see stringFilter), for output that did not pass
// through one: a card output journaled before the stream removed them.
// Invalid UTF-8 becomes U+FFFD first. s is returned as is when it holds
// none; on output a card stream produced it changes nothing.
func StripStringSequences(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0x1b) < 0 && !strings.Contains(s, "\xc2") {
		return s // the common case, without a copy
	}
	var f stringFilter
	return string(f.filter([]byte(s)))
}
