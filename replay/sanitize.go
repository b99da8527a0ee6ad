package replay

import (
	"fmt"
	"strings"
)

// sanitizeLines splits text into lines fit for a terminal: "\r\n" is a line
// break, a carriage return inside a line keeps what was drawn last (a
// progress bar's final state), and every line is cleaned (see clean).
func sanitizeLines(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	raw := strings.Split(text, "\n")
	out := make([]string, len(raw))
	for i, l := range raw {
		l = strings.TrimRight(l, "\r")
		if j := strings.LastIndexByte(l, '\r'); j >= 0 {
			l = l[j+1:]
		}
		out[i] = clean(l)
	}
	return out
}

// clean makes s safe to print on one terminal line: invalid UTF-8 becomes
// U+FFFD, ANSI CSI and OSC sequences are dropped, and any other control
// character (C0 but tab, DEL, C1) is shown as a visible escape such as ^[
// or <U+009B>.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if !hasControl(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '\x1b' && i+1 < len(rs) && rs[i+1] == '[':
			i = skipCSI(rs, i+2)
		case r == '\x1b' && i+1 < len(rs) && rs[i+1] == ']':
			i = skipOSC(rs, i+2)
		case r == '\t' || r >= 0x20 && r < 0x7f || r >= 0xa0:
			b.WriteRune(r)
		case r < 0x20:
			b.WriteByte('^')
			b.WriteRune(r + '@')
		default:
			fmt.Fprintf(&b, "<U+%04X>", r)
		}
	}
	return b.String()
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 && r != '\t' || r >= 0x7f && r < 0xa0 {
			return true
		}
	}
	return false
}

// skipCSI returns the index of the final byte of a CSI sequence whose
// parameters start at i (or the last index when it is unterminated).
func skipCSI(rs []rune, i int) int {
	for ; i < len(rs); i++ {
		if rs[i] >= 0x40 && rs[i] <= 0x7e {
			return i
		}
		if rs[i] < 0x20 || rs[i] > 0x7e {
			return i - 1
		}
	}
	return len(rs) - 1
}

// skipOSC returns the index of the terminator (BEL or the "\" of ESC \) of
// an OSC sequence whose text starts at i.
func skipOSC(rs []rune, i int) int {
	for ; i < len(rs); i++ {
		switch {
		case rs[i] == '\a':
			return i
		case rs[i] == '\x1b' && i+1 < len(rs) && rs[i+1] == '\\':
			return i + 1
		}
	}
	return len(rs) - 1
}
