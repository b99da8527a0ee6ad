package tools

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// CapText is a tool result's text as the model reads it, for a tool other
// than bash (an MCP server's): at most limit runes (DefaultOutputLimit when
// limit <= 0), cut on a rune boundary keeping the head — a listing or a
// document starts with what matters — followed by a line saying how many
// characters were left out and the same truncation marker bash results end
// with, naming spillPath (or saying the full text is unavailable when it is
// ""). The two closing lines are never cut. cut reports whether text was
// cut; an uncut text is returned unchanged.
func CapText(text string, limit int, spillPath string) (capped string, cut bool) {
	if limit <= 0 {
		limit = DefaultOutputLimit
	}
	n := utf8.RuneCountInString(text)
	if n <= limit {
		return text, false
	}
	marker := truncationMarker(spillPath, "")
	// The omission line is at its longest when everything is omitted; a
	// newline ends the head and another the omission line.
	reserve := 1 + utf8.RuneCountInString(headOmission(n)) + 1 + utf8.RuneCountInString(marker)
	keep := max(limit-reserve, 0)
	i := 0
	for k := 0; k < keep; k++ {
		_, size := utf8.DecodeRuneInString(text[i:])
		i += size
	}
	head := strings.TrimRight(text[:i], "\n")
	var b strings.Builder
	if head != "" {
		b.WriteString(head)
		b.WriteByte('\n')
	}
	b.WriteString(headOmission(n - keep))
	b.WriteByte('\n')
	b.WriteString(marker)
	return b.String(), true
}

// headOmission ends a text whose last n characters were cut.
func headOmission(n int) string {
	return strings.TrimSuffix(omissionNotice(n), "\n")
}

// RawInput is logged arguments as a card's rawInput, as every tool's card
// shows them: the compacted JSON value when valid (and decodable by any
// client), else the text (valid UTF-8), nil when empty.
func RawInput(args json.RawMessage) any { return rawValue(args) }
