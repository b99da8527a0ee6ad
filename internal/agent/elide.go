package agent

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// What an elided output keeps: its first and last lines, each cut to a
// length, around one marker line.
const (
	elideHead     = 5
	elideTail     = 5
	elideLineKeep = 240 // bytes of one kept line
	// An output is elided only when that saves at least this share of it.
	elideMinSaving = 4 // a quarter
)

// elidedPrefix starts the marker line of an elided output; an output that
// holds it was elided already.
const elidedPrefix = "[… compacted: "

// elide shortens an old command output to its first and last lines (each
// cut to elideLineKeep bytes), with a marker line between them saying what
// was left out and where the whole may still be: the spill file its own
// markers name, or else running the command again. The tail keeps the
// tool's closing markers ("[exit code: 2]", "[output truncated; full
// output: …]"). An output already short, or already elided, comes back as
// it is. elide is a pure function of s: a reload elides exactly as the live
// session did.
func elide(s string) string {
	if strings.Contains(s, elidedPrefix) {
		return s
	}
	headEnd := nthLineEnd(s, elideHead)
	tailStart := nthLineStartFromEnd(s, elideTail)
	if tailStart <= headEnd {
		tailStart = headEnd // few lines: maybe only long ones to cut
	}
	head, tail := clipLines(s[:headEnd]), clipLines(s[tailStart:])
	cut := len(s) - len(head) - len(tail)
	if cut <= 0 {
		return s
	}
	lines := countLines(s) - countLines(s[:headEnd]) - countLines(s[tailStart:])
	marker := elidedMarker(lines, cut, spillPath(s[tailStart:]))
	var b strings.Builder
	b.Grow(len(head) + len(marker) + len(tail) + 2)
	b.WriteString(head)
	if head != "" && !strings.HasSuffix(head, "\n") {
		b.WriteByte('\n')
	}
	b.WriteString(marker)
	if tail != "" {
		b.WriteByte('\n')
		b.WriteString(tail)
	}
	out := b.String()
	if len(s)-len(out) < len(s)/elideMinSaving {
		return s // not worth losing anything for
	}
	return out
}

func elidedMarker(lines, bytes int, spill string) string {
	where := "run the command again if you need them"
	if spill != "" {
		where = "the full output may still be in " + spill
	}
	if lines == 0 {
		return fmt.Sprintf("%s%d bytes of this old output's long lines were elided to save context; %s]", elidedPrefix, bytes, where)
	}
	return fmt.Sprintf("%s%d lines (%d bytes) of this old output were elided to save context; %s]", elidedPrefix, lines, bytes, where)
}

// countLines is how many lines s has; a final newline starts none.
func countLines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// spillPath is the file an output's own markers name as holding the whole
// output ("full output: PATH]"), or "" when none does. The markers close an
// output: tail is its last lines.
func spillPath(tail string) string {
	const key = "full output: "
	i := -1
	for at := 0; ; {
		j := strings.Index(tail[at:], key) // Index is vectorized; LastIndex is not
		if j < 0 {
			break
		}
		i, at = at+j, at+j+len(key)
	}
	if i < 0 {
		return ""
	}
	rest := tail[i+len(key):]
	end := strings.IndexAny(rest, "]\n")
	if end <= 0 {
		return ""
	}
	p := rest[:end]
	if !strings.HasPrefix(p, "/") {
		return "" // "(unavailable)"
	}
	return p
}

// nthLineEnd is the index just past the nth newline of s, or len(s).
func nthLineEnd(s string, n int) int {
	at := 0
	for range n {
		i := strings.IndexByte(s[at:], '\n')
		if i < 0 {
			return len(s)
		}
		at += i + 1
	}
	return at
}

// nthLineStartFromEnd is where the last n lines of s begin (a final
// newline does not start an empty line), not counting the tool's marker
// lines at the very end ("[exit code: 1]", at most elideMarkers of them).
func nthLineStartFromEnd(s string, n int) int {
	end := len(s)
	if strings.HasSuffix(s, "\n") {
		end--
	}
	markers := 0
	for n > 0 {
		i := strings.LastIndexByte(s[:end], '\n')
		line := s[i+1 : end]
		if markers < elideMarkers && n == elideTail && isMarkerLine(line) {
			markers++
		} else {
			n--
		}
		if i < 0 {
			return 0
		}
		end = i
	}
	return end + 1
}

// elideMarkers is how many marker lines the tail keeps beyond its lines.
const elideMarkers = 4

// isMarkerLine reports whether line is one of the tool's own markers.
func isMarkerLine(line string) bool {
	return len(line) >= 2 && line[0] == '[' && line[len(line)-1] == ']'
}

// hasLongLine reports whether a line of s is longer than elideLineKeep.
func hasLongLine(s string) bool {
	for len(s) > elideLineKeep {
		i := strings.IndexByte(s, '\n')
		if i < 0 || i > elideLineKeep {
			return true
		}
		s = s[i+1:]
	}
	return false
}

// clipLines cuts every line of s longer than elideLineKeep bytes, on a
// rune boundary, marking the cut with "…".
func clipLines(s string) string {
	if !hasLongLine(s) {
		return s
	}
	var b strings.Builder
	for s != "" {
		line := s
		i := strings.IndexByte(s, '\n')
		if i >= 0 {
			line, s = s[:i+1], s[i+1:]
		} else {
			s = ""
		}
		if len(line) <= elideLineKeep {
			b.WriteString(line)
			continue
		}
		cut := elideLineKeep
		for cut > 0 && !utf8.RuneStart(line[cut]) {
			cut--
		}
		b.WriteString(line[:cut])
		b.WriteString("…")
		if strings.HasSuffix(line, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}
