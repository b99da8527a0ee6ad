package changes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// history is the session's changes in order, which of them were undone,
// and which turn each came in.
type history struct {
	mu      sync.Mutex
	turn    int
	records []record       // commands' changes, oldest first
	known   map[string]int // event id → index in records (-1: an undo)
}

type record struct {
	ev     event.FileChanges
	turn   int
	undone bool
}

func (h *history) newTurn() {
	h.mu.Lock()
	h.turn++
	h.mu.Unlock()
}

// record notes ev once: a command's changes, or an undo marking the
// changes it took back.
func (h *history) record(ev event.FileChanges) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, seen := h.known[ev.ID]; seen {
		return
	}
	if len(ev.Undoes) > 0 || strings.HasPrefix(ev.ID, "undo-") {
		h.known[ev.ID] = -1
		for _, id := range ev.Undoes {
			if i, ok := h.known[id]; ok && i >= 0 {
				h.records[i].undone = true
			}
		}
		return
	}
	h.known[ev.ID] = len(h.records)
	h.records = append(h.records, record{ev: ev, turn: h.turn})
}

// pick is what an undo takes back, newest first: the newest change not
// undone, or (whole) every change not undone of that change's turn.
func (h *history) pick(whole bool) []event.FileChanges {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []event.FileChanges
	turn := -1
	for i := len(h.records) - 1; i >= 0; i-- {
		r := h.records[i]
		if r.undone {
			continue
		}
		if turn < 0 {
			turn = r.turn
		}
		if r.turn != turn {
			break
		}
		out = append(out, r.ev)
		if !whole {
			break
		}
	}
	return out
}

// UndoUsage is the /undo command's argument hint.
const UndoUsage = "turn"

// Undo takes back the newest change not yet undone (arg ""), or every
// change of the newest turn that has one (arg "turn"), and returns the
// answer for the user. A file is put back only if it still holds what the
// change left; otherwise it is left alone and named ("notes.txt changed
// since; not undone"). The undo is emitted as one FileChanges event (ID
// "undo-…", Undoes naming the changes), which marks them undone: undoing
// again takes back the next older change, never the same one twice.
func (t *Tracker) Undo(ctx context.Context, arg string) string {
	whole := false
	switch strings.TrimSpace(arg) {
	case "":
	case UndoUsage:
		whole = true
	default:
		return "Usage: /undo takes back the last change a command made to your files; /undo turn takes back everything the last turn changed.\n\n"
	}
	if err := t.Wait(ctx); err != nil {
		return "Nothing undone: " + err.Error() + ".\n\n"
	}
	targets := t.hist.pick(whole)
	if len(targets) == 0 {
		return "Nothing to undo: no change to your files is left to take back.\n\n"
	}
	ev, err := t.undo(targets)
	if err != nil {
		return "Nothing undone: " + err.Error() + ".\n\n"
	}
	t.emit(ev)
	return undoReply(ev)
}

// undo puts back targets' files (newest change first) and returns the
// undo's event. Each file is written in the tracked root that holds it
// (an os.Root), a file in no root tracked now is refused.
func (t *Tracker) undo(targets []event.FileChanges) (event.FileChanges, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	_ = t.refresh() // what happened before the undo stays out of it
	if err := t.openStore(); err != nil {
		return event.FileChanges{}, err // the contents to put back are in the store
	}
	u := undoer{locate: t.locate, opened: map[*root]*os.Root{}, store: t.opt.Store, maxKept: t.opt.MaxKept}
	defer u.close()
	ev := event.FileChanges{ID: "undo-" + randomSuffix(), Dir: t.opt.Dir}
	for _, c := range targets {
		ev.Undoes = append(ev.Undoes, c.ID)
		for i := len(c.Files) - 1; i >= 0; i-- {
			u.restore(c.Files[i])
		}
	}
	_, _, _ = t.lookAll() // the undo's own writes are no one's change
	ev.Files = merge(t.opt.Store, nil, u.done)
	ev.Refused = u.refused
	return ev, nil
}

// undoer restores files under the tracked roots.
type undoer struct {
	locate  func(p string) (*root, string, bool)
	opened  map[*root]*os.Root
	root    *os.Root // the root of the file being restored
	store   *Store
	maxKept int64
	done    []event.FileChange // what was put back, in order
	refused []string
}

// open makes u.root the os.Root holding path p and returns p's name in it;
// ok is false (and p refused) when p lies in no tracked root or is not a
// clean local path there.
func (u *undoer) open(p string) (name string, ok bool) {
	r, rel, found := u.locate(p)
	name = filepath.FromSlash(rel)
	if !found || !filepath.IsLocal(name) || path.Clean(rel) != rel {
		u.refuse(p, "is not a path under the session's directories")
		return "", false
	}
	if u.opened[r] == nil {
		or, err := os.OpenRoot(r.dir)
		if err != nil {
			u.refuse(p, err.Error())
			return "", false
		}
		u.opened[r] = or
	}
	u.root = u.opened[r]
	return name, true
}

// close closes the roots opened.
func (u *undoer) close() {
	for _, r := range u.opened {
		r.Close()
	}
}

// restore puts f's path back to what it held before f, if it still holds
// what f left.
func (u *undoer) restore(f event.FileChange) {
	name, ok := u.open(f.Path)
	if !ok {
		return
	}
	if f.Large {
		u.refuse(f.Path, "is too large to have been kept")
		return
	}
	cur, exists, err := u.current(name)
	switch {
	case err != nil:
		u.refuse(f.Path, err.Error())
		return
	case f.Op == event.ChangeDeleted && exists, f.Op != event.ChangeDeleted && (!exists || cur != f.New):
		u.refuse(f.Path, "changed since")
		return
	}
	if f.Op == event.ChangeCreated {
		err = u.root.Remove(name)
	} else {
		err = u.write(name, f)
	}
	if err != nil {
		u.refuse(f.Path, err.Error())
		return
	}
	u.done = append(u.done, reverse(f))
}

// current is the hash of name's content now; exists is false when there is
// no file there.
func (u *undoer) current(name string) (hash string, exists bool, err error) {
	fi, err := u.root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > u.maxKept {
		return "", true, nil // not the file the change left
	}
	f, err := u.root.Open(name)
	if err != nil {
		return "", true, err
	}
	defer f.Close()
	var buf []byte
	data, err := readAll(f, u.maxKept+1, &buf)
	if err != nil {
		return "", true, err
	}
	return Hash(data), true, nil
}

// write puts f's old content at name, through a temporary file renamed
// into place, with the file's current permissions (its old ones when it
// was deleted).
func (u *undoer) write(name string, f event.FileChange) error {
	data, err := u.store.Get(f.Old)
	if errors.Is(err, ErrNotKept) {
		return errors.New("its earlier content is no longer kept")
	}
	if err != nil {
		return err
	}
	perm := fs.FileMode(f.Mode) & fs.ModePerm
	if fi, err := u.root.Lstat(name); err == nil {
		perm = fi.Mode().Perm()
	}
	if perm == 0 {
		perm = 0o644
	}
	dir := filepath.Dir(name)
	if err := u.root.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(dir, ".dsh-undo-"+randomSuffix())
	w, err := u.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = u.root.Chmod(tmp, perm)
	}
	if err == nil {
		err = u.root.Rename(tmp, name)
	}
	if err != nil {
		_ = u.root.Remove(tmp)
	}
	return err
}

func (u *undoer) refuse(p, why string) {
	u.refused = append(u.refused, fmt.Sprintf("%s %s; not undone", p, why))
}

// reverse is the change that undoing f makes.
func reverse(f event.FileChange) event.FileChange {
	r := event.FileChange{Path: f.Path, Old: f.New, New: f.Old, OldSize: f.NewSize, NewSize: f.OldSize, Mode: f.Mode}
	switch f.Op {
	case event.ChangeCreated:
		r.Op = event.ChangeDeleted
	case event.ChangeDeleted:
		r.Op = event.ChangeCreated
	default:
		r.Op = event.ChangeModified
	}
	return r
}

// undoReply is the answer to an /undo that ran.
func undoReply(ev event.FileChanges) string {
	var b strings.Builder
	if len(ev.Files) == 0 {
		b.WriteString("Nothing undone.\n")
	} else {
		fmt.Fprintf(&b, "Undone: %s put back (%s).\n", countFiles(len(ev.Files)), listPaths(ev.Files, 5))
	}
	for _, r := range ev.Refused {
		b.WriteString(r + ".\n")
	}
	return b.String() + "\n"
}

func countFiles(n int) string {
	if n == 1 {
		return "1 file"
	}
	return fmt.Sprintf("%d files", n)
}

// listPaths is the first n paths of fs, comma-separated, and how many more.
func listPaths(fs []event.FileChange, n int) string {
	var names []string
	for i, f := range fs {
		if i == n {
			names = append(names, fmt.Sprintf("and %d more", len(fs)-n))
			break
		}
		names = append(names, f.Path)
	}
	return strings.Join(names, ", ")
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
