package chat

import (
	"fmt"
	"path/filepath"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/tools"
)

// Bounds of the diffs drawn on a card: past them a marker line says how
// many lines of the diff were left out and how many of those were added
// and removed.
const (
	// maxFileDiffLines is how many lines of one file's diff (hunk
	// headers included) are drawn.
	maxFileDiffLines = 200
	// maxCardDiffLines is how many diff lines one card draws in all; the
	// files past it show their name and the marker only.
	maxCardDiffLines = 1000
	// maxDiffLineWidth is the width a diff line is cut at (with …): a
	// minified file's one line must not fill the screen.
	maxDiffLineWidth = 300
)

// SetCwd makes the diffs name files under dir relative to it (the
// session's directory; "" keeps them absolute, as they come).
func (r *Renderer) SetCwd(dir string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cwd = dir
}

// drawContent draws a card's content behind its bars: text blocks as
// lines, diffs as unified diffs (bounded). It returns the lines the diffs
// added and removed, and whether there was a diff.
func (r *Renderer) drawContent(c *card, content []sdk.ToolCallContent) (added, removed int, diffs bool) {
	budget := maxCardDiffLines
	for _, it := range content {
		switch {
		case it.Diff != nil:
			a, d := r.drawDiff(it.Diff, &budget)
			added, removed, diffs = added+a, removed+d, true
		case it.Content != nil && it.Content.Content.Text != nil:
			r.stream(c, tools.CleanTerminalText(strings.TrimSuffix(it.Content.Content.Text.Text, "\n")+"\n"))
		}
	}
	return added, removed, diffs
}

// drawDiff draws one file's diff behind a card's bars, at most
// maxFileDiffLines lines and what is left of budget, and returns the lines
// added and removed (all of them, drawn or not).
func (r *Renderer) drawDiff(d *sdk.ToolCallContentDiff, budget *int) (added, removed int) {
	r.flushPartial()
	var old []string
	header := r.st.bold + r.shortPath(d.Path) + r.st.reset
	if d.OldText == nil {
		header += r.st.dim + " (new file)" + r.st.reset
	} else {
		old = splitLines(*d.OldText)
	}
	r.barLine(header)
	hs := hunks(lineDiff(old, splitLines(d.NewText)))
	limit := min(maxFileDiffLines, *budget)
	drawn, hiddenLines, hiddenAdded, hiddenRemoved := 0, 0, 0, 0
	for _, h := range hs {
		lines := r.hunkLines(h)
		for i, op := range append([]diffOp{{}}, h.ops...) { // {} stands for the header
			if op.kind == '+' {
				added++
			} else if op.kind == '-' {
				removed++
			}
			if drawn >= limit {
				hiddenLines++
				hiddenAdded += b2i(op.kind == '+')
				hiddenRemoved += b2i(op.kind == '-')
				continue
			}
			r.drawDiffLine(lines[i])
			drawn++
		}
	}
	if len(hs) == 0 && d.OldText != nil && *d.OldText != d.NewText {
		r.barLine(r.st.dim + "(no line changed: only the newline at the end)" + r.st.reset)
	}
	*budget -= drawn
	if hiddenLines > 0 {
		r.barLine(fmt.Sprintf("%s… %d more %s of this diff not shown (+%d −%d)%s", r.st.dim, hiddenLines,
			plural(hiddenLines, "line", "lines"), hiddenAdded, hiddenRemoved, r.st.reset))
	}
	return added, removed
}

// diffLine is one line of a drawn diff: its text and colour.
type diffLine struct{ colour, text string }

// hunkLines is h drawn: its @@ header, then one line per op, cleaned of
// control sequences, cut at maxDiffLineWidth, with its colour.
func (r *Renderer) hunkLines(h hunk) []diffLine {
	out := make([]diffLine, 0, len(h.ops)+1)
	out = append(out, diffLine{r.st.cyan, fmt.Sprintf("@@ -%s +%s @@", span(h.oldStart, h.oldLines), span(h.newStart, h.newLines))})
	for _, op := range h.ops {
		text := truncate(tools.CleanTerminalText(op.text), maxDiffLineWidth)
		switch op.kind {
		case '+':
			out = append(out, diffLine{r.st.green, "+" + text})
		case '-':
			out = append(out, diffLine{r.st.red, "-" + text})
		default:
			out = append(out, diffLine{"", " " + text})
		}
	}
	return out
}

// drawDiffLine writes l behind a card's bar: wrapped to the width (when
// drawing by lines) under its text, each piece in its colour.
func (r *Renderer) drawDiffLine(l diffLine) {
	bar := r.st.cyan + "│" + r.st.reset + " "
	width := 0
	if r.width > 0 {
		width = max(r.width-2, 1) // the bar's columns
	}
	reset := ""
	if l.colour != "" {
		reset = r.st.reset
	}
	for _, piece := range strings.Split(wrap(l.text, width, " "), "\n") {
		r.printf("%s%s%s%s\n", bar, l.colour, piece, reset)
	}
}

// barLine writes one line behind a card's bar.
func (r *Renderer) barLine(s string) {
	bar := r.st.cyan + "│" + r.st.reset + " "
	r.line(bar+s, bar)
}

// shortPath is path relative to the renderer's cwd when under it.
func (r *Renderer) shortPath(path string) string {
	if r.cwd == "" {
		return path
	}
	if rel, err := filepath.Rel(r.cwd, path); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return path
}

// span is a hunk side's range as diff -u writes it: "start,count", or
// "start" for a count of one.
func span(start, count int) string {
	if count == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, count)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
