package changes

import (
	"bytes"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// MaxDescribed is how many files of one change get their text examined
// (binary or not, first changed line): the card diffs at most this many and
// lists the rest by name and size.
const MaxDescribed = 50

// diff is what changed from a to b, sorted by path: a file only in b is
// created, one only in a deleted, one whose content (or, for a file not
// kept, whose key) differs is modified. A rename is a deletion and a
// creation. The first MaxDescribed files are described (see describe).
func diff(store *Store, a, b *Snapshot) []event.FileChange {
	var out []event.FileChange
	for p, e := range b.files {
		old, ok := a.files[p]
		switch {
		case !ok:
			out = append(out, change(p, event.ChangeCreated, entry{}, e))
		case old.hash != e.hash || (e.hash == "" && old.key != e.key):
			out = append(out, change(p, event.ChangeModified, old, e))
		}
	}
	for p, e := range a.files {
		if _, ok := b.files[p]; !ok {
			out = append(out, change(p, event.ChangeDeleted, e, entry{}))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	for i := range out {
		if i >= MaxDescribed {
			break
		}
		describe(store, &out[i])
	}
	return out
}

// change is the FileChange of path from old to new.
func change(path, op string, old, new entry) event.FileChange {
	c := event.FileChange{Path: path, Op: op, Old: old.hash, New: new.hash, OldSize: old.key.size, NewSize: new.key.size}
	c.Mode = old.key.mode & 0o7777
	if op == event.ChangeCreated {
		c.Mode = new.key.mode & 0o7777
	}
	c.Large = (op != event.ChangeCreated && old.hash == "") || (op != event.ChangeDeleted && new.hash == "")
	return c
}

// describe fills c's Binary and Line from the store's contents.
func describe(store *Store, c *event.FileChange) {
	if c.Large {
		return
	}
	var old, new []byte
	if c.Old != "" {
		old, _ = store.Get(c.Old)
	}
	if c.New != "" {
		new, _ = store.Get(c.New)
	}
	c.Binary = !IsText(old) || !IsText(new)
	if c.Binary {
		return
	}
	if c.Op == event.ChangeDeleted {
		c.Line = 1
		return
	}
	c.Line = FirstChangedLine(old, new)
}

// IsText reports whether data is shown as text: valid UTF-8 without NUL
// bytes.
func IsText(data []byte) bool {
	return utf8.Valid(data) && bytes.IndexByte(data, 0) < 0
}

// FirstChangedLine is the 1-based line of new where it first differs from
// old (1 for a created file; the line after new's last when new only lost
// lines at its end, capped to new's line count).
func FirstChangedLine(old, new []byte) int {
	n := min(len(old), len(new))
	i := 0
	for i < n && old[i] == new[i] {
		i++
	}
	// the line holding the first differing byte of new
	line := 1 + bytes.Count(new[:i], []byte{'\n'})
	if i == len(new) && i > 0 && new[i-1] == '\n' {
		line-- // new ended: point at its last line
	}
	return max(line, 1)
}

// compose is the change from a's start to b's end, for the same path: nil
// when they cancel out (created then deleted, or back to the same content).
func compose(a, b event.FileChange) *event.FileChange {
	c := b
	c.Old, c.OldSize, c.Mode = a.Old, a.OldSize, a.Mode
	switch {
	case a.Op == event.ChangeCreated && b.Op == event.ChangeDeleted:
		return nil
	case a.Op == event.ChangeCreated:
		c.Op, c.Mode = event.ChangeCreated, b.Mode
	case a.Op == event.ChangeDeleted && b.Op == event.ChangeCreated:
		c.Op = event.ChangeModified
	}
	c.Large = a.Large || b.Large
	if c.Op == event.ChangeModified && !c.Large && c.Old == c.New {
		return nil
	}
	return &c
}

// merge folds later changes into earlier ones, by path, sorted by path.
func merge(store *Store, earlier, later []event.FileChange) []event.FileChange {
	byPath := make(map[string]event.FileChange, len(earlier)+len(later))
	for _, c := range earlier {
		byPath[c.Path] = c
	}
	for _, c := range later {
		if a, ok := byPath[c.Path]; ok {
			if m := compose(a, c); m != nil {
				byPath[c.Path] = *m
			} else {
				delete(byPath, c.Path)
			}
			continue
		}
		byPath[c.Path] = c
	}
	out := make([]event.FileChange, 0, len(byPath))
	for _, c := range byPath {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return lessPath(out[i].Path, out[j].Path) })
	for i := range out {
		if i >= MaxDescribed {
			break
		}
		describe(store, &out[i])
	}
	return out
}

// lessPath orders paths as a command's changes are listed: the session's
// directory's (relative) first, then the additional directories'
// (absolute), each by name.
func lessPath(a, b string) bool {
	if absA, absB := strings.HasPrefix(a, "/"), strings.HasPrefix(b, "/"); absA != absB {
		return absB
	}
	return a < b
}
