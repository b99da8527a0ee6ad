package presentation

import (
	"fmt"
	"path/filepath"
	"strings"

	acp "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// Contents gives the contents an event.FileChanges names (the change
// store's Get: *changes.Store). An error means the content is not held.
type Contents interface {
	Get(hash string) ([]byte, error)
}

// Change card limits.
const (
	// MaxDiffedFiles is how many files a change card diffs (and locates);
	// the rest are listed by name and size.
	MaxDiffedFiles = 50
	// MaxDiffedBytes bounds the text of a change card's diffs (old and
	// new together): a file whose texts would pass it is listed instead,
	// so one update stays a few MiB.
	MaxDiffedBytes = 8 << 20
	// maxTitleNames is how many paths a title names.
	maxTitleNames = 3
)

// ChangesCard is the card of one event.FileChanges: a completed `edit`
// tool call of its own (id ev.ID) whose content is one ACP diff per
// changed text file (path absolute, oldText absent — null — for a created
// file, newText "" for a deleted one), then one text block listing what is
// not diffed (binary files, files the store did not keep, files past
// MaxDiffedFiles or MaxDiffedBytes) and, for an undo, the files it left
// alone; its locations are the changed paths with their first changed
// line. It is the same for every client (diffs need no terminal) and the
// same live and on replay, as long as the store holds the contents. Pure
// but for reading contents; never panics.
func ChangesCard(ev event.FileChanges, contents Contents) acp.SessionUpdate {
	var content []acp.ToolCallContent
	var listed []string
	var locations []acp.ToolCallLocation
	budget := MaxDiffedBytes
	for i, f := range ev.Files {
		path := absPath(ev.Dir, f.Path)
		if i < MaxDiffedFiles {
			locations = append(locations, location(path, f))
		}
		d, why := diffOf(path, f, contents, i, &budget)
		if d != nil {
			content = append(content, *d)
			continue
		}
		listed = append(listed, fmt.Sprintf("- %s (%s)", f.Path, why))
	}
	if len(listed) > 0 {
		content = append(content, textBlocks("Not shown as diffs:\n"+strings.Join(listed, "\n"))...)
	}
	if len(ev.Refused) > 0 {
		content = append(content, textBlocks("Left alone:\n- "+strings.Join(ev.Refused, "\n- "))...)
	}
	return acp.StartToolCall(acp.ToolCallId(ev.ID), ChangesTitle(ev),
		acp.WithStartKind(acp.ToolKindEdit),
		acp.WithStartStatus(acp.ToolCallStatusCompleted),
		acp.WithStartContent(content),
		acp.WithStartLocations(locations))
}

// ChangesTitle is a change card's title: "Changed 3 files: src/a.go,
// src/b.go, README.md" (at most three names, then how many more), or for
// an undo "Undid changes to 2 files: …" ("Undid nothing: …" when every
// file was left alone).
func ChangesTitle(ev event.FileChanges) string {
	n := len(ev.Files)
	names := make([]string, 0, maxTitleNames+1)
	for i, f := range ev.Files {
		if i == maxTitleNames {
			names = append(names, fmt.Sprintf("and %d more", n-maxTitleNames))
			break
		}
		names = append(names, f.Path)
	}
	files := fmt.Sprintf("%d files", n)
	if n == 1 {
		files = "1 file"
	}
	list := strings.Join(names, ", ")
	switch {
	case len(ev.Undoes) == 0 && !strings.HasPrefix(ev.ID, "undo-"):
		return "Changed " + files + ": " + list
	case n == 0:
		return fmt.Sprintf("Undid nothing: %d %s changed since", len(ev.Refused), plural(len(ev.Refused), "file", "files"))
	}
	return "Undid changes to " + files + ": " + list
}

// diffOf is f's diff content, or nil and why it is listed instead.
// budget is what is left of MaxDiffedBytes.
func diffOf(path string, f event.FileChange, contents Contents, i int, budget *int) (*acp.ToolCallContent, string) {
	size := max(f.NewSize, f.OldSize)
	switch {
	case f.Large && size > 1<<20:
		return nil, f.Op + ", over 1 MiB, " + byteSize(size)
	case f.Large:
		return nil, f.Op + ", content not kept, " + byteSize(size)
	case f.Binary:
		return nil, f.Op + ", binary, " + byteSize(size)
	case i >= MaxDiffedFiles:
		return nil, f.Op + ", " + byteSize(size)
	case contents == nil:
		return nil, f.Op + ", content no longer kept, " + byteSize(size)
	}
	oldText, okOld := text(contents, f.Old)
	newText, okNew := text(contents, f.New)
	if !okOld || !okNew {
		return nil, f.Op + ", content no longer kept, " + byteSize(size)
	}
	if !isText(oldText) || !isText(newText) {
		return nil, f.Op + ", binary, " + byteSize(size)
	}
	cost := len(oldText) + len(newText)
	if cost > *budget {
		return nil, f.Op + ", too much to show, " + byteSize(size)
	}
	*budget -= cost
	d := &acp.ToolCallContentDiff{Type: "diff", Path: path, NewText: newText}
	if f.Op != event.ChangeCreated {
		d.OldText = &oldText
	}
	return &acp.ToolCallContent{Diff: d}, ""
}

// text is the content named hash ("" names the empty text of a file that
// did not exist); ok is false when the store does not hold it.
func text(contents Contents, hash string) (string, bool) {
	if hash == "" {
		return "", true
	}
	b, err := contents.Get(hash)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// isText: valid UTF-8 without NUL, as internal/changes decides binary.
func isText(s string) bool {
	return !strings.ContainsRune(s, 0) && strings.ToValidUTF8(s, "\uFFFD") == s
}

func location(path string, f event.FileChange) acp.ToolCallLocation {
	l := acp.ToolCallLocation{Path: path}
	if f.Line > 0 && f.Op != event.ChangeDeleted {
		line := f.Line
		l.Line = &line
	}
	return l
}

func absPath(dir, rel string) string {
	if filepath.IsAbs(rel) || dir == "" {
		return rel
	}
	return filepath.Join(dir, filepath.FromSlash(rel))
}

// byteSize is n for people: "120 B", "12.0 KiB", "2.0 MiB".
func byteSize(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
