package replay

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/tools"
)

// Summary describes a stored session for a session list.
type Summary struct {
	ID  string
	Cwd string
	// Title is the first line of the first user prompt, cleaned of control
	// characters, at most TitleMax characters.
	Title     string
	Created   time.Time
	UpdatedAt time.Time // the journal file's modification time
}

// TitleMax is the longest Summary.Title, in characters.
const TitleMax = 80

// List returns up to limit sessions (all of them when limit <= 0), most
// recently updated first (ties: higher id first), and a cursor for the next
// page ("" on the last page). cwd, when not empty, keeps only sessions whose
// header cwd is exactly cwd. cursor is "" for the first page, else one List
// returned; it names a position, not an offset, so a session created or
// deleted between pages never shifts a page. A session updated between
// pages moves to the front: it is not repeated, and later pages of that
// listing do not show it.
//
// List stats every journal but reads only the head of each one it returns
// or filters (the header and the first prompt). Files that are not
// journals, symlinks, journals without a header and sessions that have had
// no turn yet (nothing to resume: clients that open a session per chat
// would fill their pickers with them) are left out; the last stay loadable
// by id.
func (s *Store) List(cwd, cursor string, limit int) ([]Summary, string, error) {
	after, err := decodeCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	entries, err := s.entries()
	if err != nil {
		return nil, "", fmt.Errorf("list sessions: %w", err)
	}
	var out []Summary
	more := false
	for _, e := range entries {
		if cursor != "" && !e.before(after) {
			continue
		}
		sum, ok := s.summary(e)
		if !ok || cwd != "" && sum.Cwd != cwd {
			continue
		}
		if limit > 0 && len(out) == limit {
			more = true
			break
		}
		out = append(out, sum)
	}
	next := ""
	if more {
		last := out[len(out)-1]
		next = encodeCursor(entry{id: last.ID, mtime: last.UpdatedAt})
	}
	return out, next, nil
}

type entry struct {
	id    string
	mtime time.Time
}

// before reports whether e sorts after c in List's order (newest first).
func (e entry) before(c entry) bool {
	if n := e.mtime.Compare(c.mtime); n != 0 {
		return n < 0
	}
	return e.id < c.id
}

// entries lists the journal files, newest first.
func (s *Store) entries() ([]entry, error) {
	d, err := s.root.Open(".")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	des, err := d.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	var out []entry
	for _, de := range des {
		id, ok := strings.CutSuffix(de.Name(), ext)
		if !ok || !de.Type().IsRegular() || ValidID(id) != nil {
			continue
		}
		fi, err := de.Info()
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, entry{id: id, mtime: fi.ModTime()})
	}
	slices.SortFunc(out, func(a, b entry) int {
		if n := b.mtime.Compare(a.mtime); n != 0 {
			return n
		}
		return cmp.Compare(b.id, a.id)
	})
	return out, nil
}

func (s *Store) summary(e entry) (Summary, bool) {
	f, err := s.open(e.id)
	if err != nil {
		return Summary{}, false
	}
	defer f.Close()
	h, prompt, turns := readHead(f)
	if h == nil || !turns {
		return Summary{}, false
	}
	return Summary{ID: e.id, Cwd: h.Cwd, Title: Title(prompt), Created: h.Created, UpdatedAt: e.mtime}, true
}

// Title makes a one-line title of at most TitleMax characters from a prompt:
// its first non-blank line, control characters removed, runs of white space
// collapsed, cut with "…" when too long.
func Title(prompt string) string {
	for line := range strings.Lines(prompt) {
		t := strings.Join(strings.Fields(tools.CleanTerminalText(strings.TrimRight(line, "\r\n"))), " ")
		if t == "" {
			continue
		}
		if utf8.RuneCountInString(t) <= TitleMax {
			return t
		}
		r := []rune(t)
		return strings.TrimRight(string(r[:TitleMax-1]), " ") + "…"
	}
	return ""
}

func encodeCursor(e entry) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(e.mtime.UnixNano(), 10) + "/" + e.id))
}

func decodeCursor(c string) (entry, error) {
	if c == "" {
		return entry{}, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return entry{}, fmt.Errorf("%w: %q", ErrBadCursor, c)
	}
	ns, id, ok := strings.Cut(string(b), "/")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || ValidID(id) != nil {
		return entry{}, fmt.Errorf("%w: %q", ErrBadCursor, c)
	}
	return entry{id: id, mtime: time.Unix(0, n)}, nil
}
