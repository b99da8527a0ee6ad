package chat

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
)

// changeCard is a change card as the daemon sends it: a completed edit
// call whose content is diffs, then a text block.
func changeCard(id string, content ...sdk.ToolCallContent) sdk.SessionUpdate {
	return sdk.SessionUpdate{ToolCall: &sdk.SessionUpdateToolCall{ToolCallId: sdk.ToolCallId(id), Title: "Changed files",
		Kind: sdk.ToolKindEdit, Status: sdk.ToolCallStatusCompleted, Content: content}}
}

func diffContent(path string, old *string, new string) sdk.ToolCallContent {
	return sdk.ToolCallContent{Diff: &sdk.ToolCallContentDiff{Type: "diff", Path: path, OldText: old, NewText: new}}
}

// A change card draws each diff as a unified diff behind its bars (paths
// relative to the session's directory, a created file marked), then its
// text, and closes with the lines added and removed; it is not left
// running.
func TestChangeCardDrawsUnifiedDiffs(t *testing.T) {
	var out bytes.Buffer
	r := NewRenderer(&out, false)
	r.SetCwd("/p")
	old := "one\ntwo\nthree\n"
	r.Update(changeCard("changes-1",
		diffContent("/p/notes.txt", &old, "one\nTWO\nthree\n"),
		diffContent("/p/src/new.go", nil, "package x\n"),
		diffContent("/elsewhere/x", &old, ""),
		diffContent("/p/eol.txt", &old, strings.TrimSuffix(old, "\n")),
		sdk.ToolContent(sdk.TextBlock("Not shown as diffs:\n- app.bin (created, binary, 12.0 KiB)")),
	))
	want := "┌ Changed files\n" +
		"│ notes.txt\n" +
		"│ @@ -1,3 +1,3 @@\n" +
		"│  one\n" +
		"│ -two\n" +
		"│ +TWO\n" +
		"│  three\n" +
		"│ src/new.go (new file)\n" +
		"│ @@ -0,0 +1 @@\n" +
		"│ +package x\n" +
		"│ /elsewhere/x\n" +
		"│ @@ -1,3 +0,0 @@\n" +
		"│ -one\n" +
		"│ -two\n" +
		"│ -three\n" +
		"│ eol.txt\n" +
		"│ (no line changed: only the newline at the end)\n" +
		"│ Not shown as diffs:\n" +
		"│ - app.bin (created, binary, 12.0 KiB)\n" +
		"└ ✓ +2 −4\n"
	if out.String() != want {
		t.Errorf("drawn:\n%s\nwant:\n%s", out.String(), want)
	}
	if title, _ := r.Running(); title != "" {
		t.Errorf("the change card is still running: %q", title)
	}
}

// A huge diff is cut at maxFileDiffLines with a marker that says how many
// lines were left out and how many of those were added and removed; a
// card stops at maxCardDiffLines in all; long lines are cut; escape
// sequences in a file never reach the terminal; colour marks the sides.
func TestChangeCardBoundsHugeDiffs(t *testing.T) {
	var old, new strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&old, "line %d\n", i)
		fmt.Fprintf(&new, "line %d changed\n", i)
	}
	oldText := old.String()
	long := strings.Repeat("x", 5000) + "\n"
	evil := "safe\x1b]52;c;cGF3bmVk\x07\x1b[2J\n"
	files := []sdk.ToolCallContent{diffContent("/p/long.txt", nil, long), diffContent("/p/evil.txt", nil, evil)}
	for i := range 8 {
		files = append(files, diffContent(fmt.Sprintf("/p/big%d.txt", i), &oldText, new.String()))
	}
	var out bytes.Buffer
	r := NewRenderer(&out, true)
	r.SetCwd("/p")
	r.Update(changeCard("changes-2", files...))
	s := out.String()

	// big0: 200 lines drawn (a header, 199 removed lines), 9 801 left out.
	if !strings.Contains(s, "… 9801 more lines of this diff not shown (+5000 −4801)") {
		t.Errorf("no marker for big0's 9 801 lines left out:\n%s", tail(s))
	}
	if n := strings.Count(s, "more lines of this diff not shown"); n != 8 {
		t.Errorf("%d markers, want one per big file (the card's bound reached in the fifth)", n)
	}
	if !strings.Contains(s, "big7.txt\x1b[0m\n\x1b[36m│\x1b[0m \x1b[2m… 10001 more lines of this diff not shown (+5000 −5000)") {
		t.Errorf("the last file, past the card's bound, is not named with its marker alone:\n%s", tail(s))
	}
	if n := strings.Count(s, "\n"); n > maxCardDiffLines+60 {
		t.Errorf("%d lines drawn, over the card's bound", n)
	}
	if strings.Contains(s, strings.Repeat("x", maxDiffLineWidth+1)) {
		t.Error("a 5 000-character line was drawn whole")
	}
	if strings.Contains(s, "\x1b]52") || strings.Contains(s, "\x1b[2J") {
		t.Errorf("a file's escape sequences reached the terminal: %q", s[strings.Index(s, "evil.txt"):])
	}
	for _, want := range []string{"\x1b[31m-line 0\x1b[0m", "\x1b[32m+safe\x1b[0m", "\x1b[36m@@ -1,5000 +1,5000 @@\x1b[0m", "\x1b[32m✓ +40002 −40000\x1b[0m"} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q in the coloured card", want)
		}
	}
}

func tail(s string) string { return s[max(0, len(s)-2000):] }

// Drawn by lines, a long diff line wraps at words behind the card's bar,
// under its text, every piece in its side's colour.
func TestChangeCardWrapsDiffLinesInColour(t *testing.T) {
	var out bytes.Buffer
	r := NewRenderer(&out, true)
	r.SetWidth(40)
	old := "short\n"
	r.Update(changeCard("changes-3", diffContent("/p/a.txt", &old, "words that go on past the forty columns of this terminal\n")))
	green, bar := "\x1b[32m", "\x1b[36m│\x1b[0m "
	want := bar + green + "+words that go on past the forty\x1b[0m\n" +
		bar + green + " columns of this terminal\x1b[0m\n"
	if !strings.Contains(out.String(), want) {
		t.Errorf("drawn:\n%q\nwant in it:\n%q", out.String(), want)
	}
}
