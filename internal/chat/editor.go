package chat

import (
	"strings"
	"unicode"

	"github.com/charmbracelet/x/ansi"
)

// editor is the chat's multi-line input: lines of runes and a cursor, the
// usual Emacs/readline keys, drawn soft-wrapped with the cursor in reverse
// video. (Bubbles' textarea would do, but it links a clipboard package
// whose init looks for xclip, xsel and wl-copy along $PATH at every start
// of the daemon, which is the same binary: some fifty stat calls.)
type editor struct {
	lines [][]rune // never empty
	row   int
	col   int
}

func newEditor() *editor { return &editor{lines: [][]rune{nil}} }

// value is the text, lines joined by newlines.
func (e *editor) value() string {
	parts := make([]string, len(e.lines))
	for i, l := range e.lines {
		parts[i] = string(l)
	}
	return strings.Join(parts, "\n")
}

func (e *editor) empty() bool { return len(e.lines) == 1 && len(e.lines[0]) == 0 }

// reset empties the editor.
func (e *editor) reset() { e.lines, e.row, e.col = [][]rune{nil}, 0, 0 }

// set replaces the text, the cursor at its end.
func (e *editor) set(s string) {
	e.reset()
	e.insert(s)
}

// insert inserts s at the cursor (a newline splits the line) and leaves
// the cursor after it.
func (e *editor) insert(s string) {
	for i, part := range strings.Split(s, "\n") {
		if i > 0 {
			e.newline()
		}
		rs := []rune(part)
		l := e.lines[e.row]
		nl := make([]rune, 0, len(l)+len(rs))
		nl = append(append(append(nl, l[:e.col]...), rs...), l[e.col:]...)
		e.lines[e.row] = nl
		e.col += len(rs)
	}
}

func (e *editor) newline() {
	l := e.lines[e.row]
	head, tail := append([]rune(nil), l[:e.col]...), append([]rune(nil), l[e.col:]...)
	rest := append([][]rune{head, tail}, e.lines[e.row+1:]...)
	e.lines = append(e.lines[:e.row], rest...)
	e.row, e.col = e.row+1, 0
}

// onFirstLine and onLastLine say where the cursor is (Up and Down browse
// the history from there).
func (e *editor) onFirstLine() bool { return e.row == 0 }
func (e *editor) onLastLine() bool  { return e.row == len(e.lines)-1 }

// edit applies an editing key (as tea names it) or typed text; it reports
// whether it was one.
func (e *editor) edit(key, text string) bool {
	l := e.lines[e.row]
	switch key {
	case "left", "ctrl+b":
		if e.col > 0 {
			e.col--
		} else if e.row > 0 {
			e.row--
			e.col = len(e.lines[e.row])
		}
	case "right", "ctrl+f":
		if e.col < len(l) {
			e.col++
		} else if e.row < len(e.lines)-1 {
			e.row, e.col = e.row+1, 0
		}
	case "up", "ctrl+p":
		if e.row > 0 {
			e.row--
			e.col = min(e.col, len(e.lines[e.row]))
		}
	case "down", "ctrl+n":
		if e.row < len(e.lines)-1 {
			e.row++
			e.col = min(e.col, len(e.lines[e.row]))
		}
	case "home", "ctrl+a":
		e.col = 0
	case "end", "ctrl+e":
		e.col = len(l)
	case "alt+left", "alt+b":
		e.col = wordStart(l, e.col)
	case "alt+right", "alt+f":
		e.col = wordEnd(l, e.col)
	case "backspace", "ctrl+h":
		e.backspace()
	case "delete", "ctrl+d":
		if e.col < len(l) {
			e.lines[e.row] = append(l[:e.col:e.col], l[e.col+1:]...)
		} else if e.row < len(e.lines)-1 {
			e.lines[e.row] = append(l[:len(l):len(l)], e.lines[e.row+1]...)
			e.lines = append(e.lines[:e.row+1], e.lines[e.row+2:]...)
		}
	case "ctrl+u":
		e.lines[e.row] = append([]rune(nil), l[e.col:]...)
		e.col = 0
	case "ctrl+k":
		e.lines[e.row] = l[:e.col:e.col]
	case "ctrl+w", "alt+backspace":
		start := wordStart(l, e.col)
		e.lines[e.row] = append(l[:start:start], l[e.col:]...)
		e.col = start
	case "ctrl+j", "alt+enter", "shift+enter":
		e.newline()
	default:
		if text == "" || strings.IndexFunc(text, unicode.IsControl) >= 0 {
			return false
		}
		e.insert(text)
	}
	return true
}

func (e *editor) backspace() {
	if e.col > 0 {
		l := e.lines[e.row]
		e.lines[e.row] = append(l[:e.col-1:e.col-1], l[e.col:]...)
		e.col--
		return
	}
	if e.row == 0 {
		return
	}
	prev := e.lines[e.row-1]
	e.col = len(prev)
	e.lines[e.row-1] = append(prev[:len(prev):len(prev)], e.lines[e.row]...)
	e.lines = append(e.lines[:e.row], e.lines[e.row+1:]...)
	e.row--
}

func wordStart(l []rune, col int) int {
	for col > 0 && unicode.IsSpace(l[col-1]) {
		col--
	}
	for col > 0 && !unicode.IsSpace(l[col-1]) {
		col--
	}
	return col
}

func wordEnd(l []rune, col int) int {
	for col < len(l) && unicode.IsSpace(l[col]) {
		col++
	}
	for col < len(l) && !unicode.IsSpace(l[col]) {
		col++
	}
	return col
}

// editorRows is the most rows of input shown; the cursor's stay in view.
const editorRows = 8

// view draws the text soft-wrapped at width columns, each line after
// prompt (its continuations after as many spaces), the cursor's cell in
// reverse video; placeholder (dim) when empty.
func (e *editor) view(width int, prompt, placeholder string, st style) string {
	indent := strings.Repeat(" ", ansi.StringWidth(prompt))
	avail := max(width-ansi.StringWidth(prompt), 8)
	if e.empty() {
		return prompt + "\x1b[7m \x1b[27m" + st.dim + truncate(placeholder, avail-1) + st.reset
	}
	var rows []string
	cursorRow := 0
	for i, l := range e.lines {
		segs := wrapRunes(l, avail)
		for j, seg := range segs {
			lead := indent
			if i == 0 && j == 0 {
				lead = prompt
			}
			text := string(l[seg[0]:seg[1]])
			if i == e.row && e.col >= seg[0] && (e.col < seg[1] || j == len(segs)-1) {
				cursorRow = len(rows)
				at := e.col - seg[0]
				rs := []rune(text)
				under := " "
				if at < len(rs) {
					under = string(rs[at])
				}
				rest := ""
				if at+1 <= len(rs) {
					rest = string(rs[min(at+1, len(rs)):])
				}
				text = string(rs[:at]) + "\x1b[7m" + under + "\x1b[27m" + rest
			}
			rows = append(rows, lead+text)
		}
	}
	if len(rows) > editorRows {
		first := min(max(cursorRow-editorRows+1, 0), len(rows)-editorRows)
		rows = rows[first : first+editorRows]
	}
	return strings.Join(rows, "\n")
}

// wrapRunes splits l into [start, end) segments of at most width columns,
// breaking after a space when one is in the segment.
func wrapRunes(l []rune, width int) [][2]int {
	var segs [][2]int
	start := 0
	for start < len(l) || len(segs) == 0 {
		w, end, lastSpace := 0, start, -1
		for end < len(l) {
			cw := max(ansi.StringWidth(string(l[end])), 0)
			if w+cw > width-1 { // a column for the cursor at the end
				break
			}
			if l[end] == ' ' {
				lastSpace = end
			}
			w += cw
			end++
		}
		if end < len(l) && lastSpace > start {
			end = lastSpace + 1
		}
		if end == start && end < len(l) {
			end++ // a rune wider than the line
		}
		segs = append(segs, [2]int{start, end})
		if end >= len(l) {
			break
		}
		start = end
	}
	return segs
}
