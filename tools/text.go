package tools

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// CleanTerminalText turns terminal output into plain text for a reader that
// is not a terminal (the model, a fenced block): invalid UTF-8 becomes
// U+FFFD; ANSI escape sequences (CSI, OSC, DCS and the other ESC forms) are
// removed; carriage-return redraws collapse (of a line's \r-separated
// segments the last non-empty one wins; \r\n is a newline); backspaces erase
// the character before them; other control characters except tab and
// newline are dropped.
func CleanTerminalText(s string) string {
	s = stripEscapes(strings.ToValidUTF8(s, "\uFFFD"))
	if !strings.ContainsAny(s, "\r\b") && !hasControl(s) {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, line := range lines {
		lines[i] = cleanLine(line)
	}
	return strings.Join(lines, "\n")
}

// cleanLine collapses one line's carriage-return redraws and drops its
// control characters.
func cleanLine(line string) string {
	if strings.Contains(line, "\r") {
		segs := strings.Split(line, "\r")
		line = ""
		for j := len(segs) - 1; j >= 0; j-- {
			if segs[j] != "" {
				line = segs[j]
				break
			}
		}
	}
	if !strings.ContainsRune(line, '\b') && !hasControl(line) {
		return line
	}
	// The kept characters, as UTF-8: at most the line's bytes (a []rune
	// would take four times that, 4 MiB for a 1 MiB line of NULs).
	out := make([]byte, 0, len(line))
	for _, r := range line {
		switch {
		case r == '\b':
			if len(out) > 0 {
				_, size := utf8.DecodeLastRune(out)
				out = out[:len(out)-size]
			}
		case r == '\t' || !isControl(r):
			out = utf8.AppendRune(out, r)
		}
	}
	return string(out)
}

func isControl(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0)
}

func hasControl(s string) bool {
	for _, r := range s {
		if r != '\n' && r != '\t' && r != '\r' && r != '\b' && isControl(r) {
			return true
		}
	}
	return false
}

// stripEscapes removes ANSI escape sequences from valid UTF-8 text. An
// unterminated sequence at the end is removed too.
func stripEscapes(s string) string {
	if !strings.ContainsRune(s, 0x1b) && !strings.ContainsRune(s, 0x9b) && !strings.ContainsRune(s, 0x9d) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch r {
		case 0x1b:
			i += escapeLen(s[i:])
		case 0x9b: // C1 CSI
			i += size + csiLen(s[i+size:])
		case 0x9d: // C1 OSC
			i += size + stringLen(s[i+size:])
		default:
			b.WriteString(s[i : i+size])
			i += size
		}
	}
	return b.String()
}

// escapeLen is the length of the escape sequence at the start of s (s[0] is ESC).
func escapeLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch c := s[1]; {
	case c == '[':
		return 2 + csiLen(s[2:])
	case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
		return 2 + stringLen(s[2:])
	case c >= 0x20 && c <= 0x2f: // intermediates, then one final byte
		n := 2
		for n < len(s) && s[n] >= 0x20 && s[n] <= 0x2f {
			n++
		}
		if n < len(s) && s[n] >= 0x30 && s[n] <= 0x7e {
			n++
		}
		return n
	case c >= 0x30 && c <= 0x7e:
		return 2
	}
	return 1 // a lone ESC
}

// csiLen is the length of a CSI sequence's parameters, intermediates and
// final byte at the start of s.
func csiLen(s string) int {
	for n := 0; n < len(s); n++ {
		c := s[n]
		if c >= 0x40 && c <= 0x7e {
			return n + 1
		}
		if c < 0x20 || c > 0x3f {
			return n // malformed: stop before the odd byte
		}
	}
	return len(s)
}

// stringLen is the length of an OSC/DCS string body and its terminator
// (BEL or ST, ESC \) at the start of s.
func stringLen(s string) int {
	for n := 0; n < len(s); n++ {
		switch s[n] {
		case 0x07:
			return n + 1
		case 0x1b:
			if n+1 < len(s) && s[n+1] == '\\' {
				return n + 2
			}
			return n // another sequence starts: end this one here
		}
		if n+1 < len(s) && s[n] == 0xc2 && s[n+1] == 0x9c { // C1 ST
			return n + 2
		}
	}
	return len(s)
}

// keepTail returns at most max runes of s, keeping its end and cutting on a
// rune boundary; a cut text starts with a line saying how many characters
// were left out. omitted is that count.
func keepTail(s string, max int) (kept string, omitted int) {
	n := utf8.RuneCountInString(s)
	if n <= max {
		return s, 0
	}
	omitted = n - max
	i := 0
	for skip := omitted; skip > 0; skip-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	if i == len(s) {
		return strings.TrimSuffix(omissionNotice(omitted), "\n"), omitted
	}
	return omissionNotice(omitted) + s[i:], omitted
}

// omissionNotice starts a text whose first n characters were cut.
func omissionNotice(n int) string { return fmt.Sprintf("[… %d characters omitted]\n", n) }

// splitBudget shares budget runes between two texts of lengths a and b: each
// gets at least half unless it needs less, and keeps its full length when
// both fit.
func splitBudget(a, b, budget int) (ka, kb int) {
	if a+b <= budget {
		return a, b
	}
	half := budget / 2
	switch {
	case a <= half:
		return a, budget - a
	case b <= half:
		return budget - b, b
	}
	return half, budget - half
}

// trimNewlines drops trailing newlines.
func trimNewlines(s string) string { return strings.TrimRight(s, "\n") }

// truncationMarker is the marker for output the model does not see whole:
// the tool contract's "[output truncated; full output: <path>]", with
// "(unavailable)" for the path when no complete spill file exists, then,
// when the executor said why it could not save one, the reason on a line
// of its own (see spillReason).
func truncationMarker(spillPath, spillErr string) string {
	return withReason("[output truncated; "+fullOutput(spillPath)+"]", spillPath, spillErr)
}

// fullOutput says where the complete output is: "full output: <path>", or
// "full output: (unavailable)" when no complete spill file exists.
func fullOutput(spillPath string) string { return "full output: " + orUnavailable(spillPath) }

// spillReason is the line that follows a marker naming no spill file when
// the executor said why it could not save one ("[the full output could not
// be saved: no space left on device]"), else "".
func spillReason(spillPath, spillErr string) string {
	if spillPath != "" || spillErr == "" {
		return ""
	}
	return "[the full output could not be saved: " + spillErr + "]"
}

// withReason is marker followed by spillReason's line, when there is one.
func withReason(marker, spillPath, spillErr string) string {
	if r := spillReason(spillPath, spillErr); r != "" {
		return marker + "\n" + r
	}
	return marker
}

// limitMarker is the marker of a command that hit its process limit.
const limitMarker = "[process limit reached: the command could not start more processes]"

// assemble joins body parts and markers into a text capped at limit runes
// (unless the markers alone exceed it): bodies are cut, keeping their tails
// and sharing the budget; markers never are. markers(cut) returns the
// markers, told whether a body was cut; room is kept for the longer set.
func assemble(limit int, stdout, stderr string, markers func(cut bool) []string) (text string, cut bool) {
	lo, le := utf8.RuneCountInString(stdout), utf8.RuneCountInString(stderr)
	avail := limit - utf8.RuneCountInString(strings.Join(markers(true), "\n"))
	parts := 0
	for _, n := range []int{lo, le, len(markers(true))} {
		if n > 0 {
			parts++
		}
	}
	avail -= max(parts-1, 0) // separating newlines
	if le > 0 {
		avail -= utf8.RuneCountInString("[stderr]\n")
	}
	if lo+le > avail {
		for _, n := range []int{lo, le} {
			if n > 0 {
				avail -= utf8.RuneCountInString(omissionNotice(n))
			}
		}
	}
	ko, ke := splitBudget(lo, le, max(avail, 0))
	stdout, omittedOut := keepTail(stdout, ko)
	stderr, omittedErr := keepTail(stderr, ke)
	cut = omittedOut+omittedErr > 0
	var out []string
	if stdout != "" {
		out = append(out, stdout)
	}
	if stderr != "" {
		out = append(out, "[stderr]\n"+stderr)
	}
	out = append(out, markers(cut)...)
	return strings.Join(out, "\n"), cut
}
