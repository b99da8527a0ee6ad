package changes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// /undo restores the files on disk, newest change first, and never twice.
func TestUndoNewestFirst(t *testing.T) {
	f := newFixture(t)
	f.write("notes.txt", "v1\n")
	f.write("gone.txt", "keep me\n")
	f.tr.Observe(event.UserPrompt{Text: "first"})
	f.run("c1", "echo v2 > notes.txt && rm gone.txt")
	f.tr.Observe(event.UserPrompt{Text: "second"})
	f.run("c2", "echo v3 > notes.txt && echo new > created.txt")
	ctx := context.Background()

	reply := f.tr.Undo(ctx, "")
	if f.read("notes.txt") != "v2\n" || f.read("created.txt") != "<"+notExist(f, "created.txt")+">" {
		t.Fatalf("after the first undo: notes %q, created %q; reply %q", f.read("notes.txt"), f.read("created.txt"), reply)
	}
	if !strings.Contains(reply, "2 files put back") {
		t.Errorf("reply %q", reply)
	}
	f.tr.Undo(ctx, "")
	if f.read("notes.txt") != "v1\n" || f.read("gone.txt") != "keep me\n" {
		t.Fatalf("after the second undo: notes %q, gone %q", f.read("notes.txt"), f.read("gone.txt"))
	}
	reply = f.tr.Undo(ctx, "")
	if !strings.HasPrefix(reply, "Nothing to undo") || f.read("notes.txt") != "v1\n" {
		t.Errorf("a third undo: %q, notes %q", reply, f.read("notes.txt"))
	}
	evs := f.sink.all()
	if len(evs) != 4 || len(evs[2].Undoes) != 1 || evs[2].Undoes[0] != "changes-c2" || evs[3].Undoes[0] != "changes-c1" {
		t.Fatalf("events: %+v", evs)
	}
	// The undo's card shows what it did: created.txt deleted, notes.txt back to v2.
	if got := summary(evs[2]); got != "deleted created.txt, modified notes.txt" {
		t.Errorf("undo event: %q", got)
	}
	if c := evs[2].Files[1]; f.text(c.Old) != "v3\n" || f.text(c.New) != "v2\n" {
		t.Errorf("undo diff: %q → %q", f.text(c.Old), f.text(c.New))
	}
	// The undo's writes are no command's change.
	if ev, ok := f.run("c3", "true"); ok {
		t.Errorf("the undo's writes were taken for a command's: %s", summary(ev))
	}
}

func notExist(f *fixture, rel string) string {
	_, err := os.ReadFile(filepath.Join(f.dir, rel))
	return err.Error()
}

// A file edited since the change is left alone and named.
func TestUndoRefusesAFileChangedSince(t *testing.T) {
	f := newFixture(t)
	f.write("notes.txt", "v1\n")
	f.write("other.txt", "o1\n")
	f.run("c1", "echo v2 > notes.txt && echo o2 > other.txt")
	f.write("notes.txt", "the user's own\n")
	reply := f.tr.Undo(context.Background(), "")
	if f.read("notes.txt") != "the user's own\n" || f.read("other.txt") != "o1\n" {
		t.Fatalf("notes %q other %q", f.read("notes.txt"), f.read("other.txt"))
	}
	if !strings.Contains(reply, "notes.txt changed since; not undone") {
		t.Errorf("reply %q", reply)
	}
	evs := f.sink.all()
	if last := evs[len(evs)-1]; len(last.Refused) != 1 || last.Refused[0] != "notes.txt changed since; not undone" || summary(last) != "modified other.txt" {
		t.Errorf("undo event %+v", last)
	}
}

// /undo turn takes back every change of the last turn that changed files.
func TestUndoTurn(t *testing.T) {
	f := newFixture(t)
	f.write("a.txt", "a1\n")
	f.tr.Observe(event.UserPrompt{Text: "one"})
	f.run("c1", "echo a2 > a.txt")
	f.tr.Observe(event.UserPrompt{Text: "two"})
	f.run("c2", "echo a3 > a.txt")
	f.run("c3", "echo b > b.txt")
	f.tr.Observe(event.UserPrompt{Text: "three: changes nothing"})
	f.tr.Undo(context.Background(), "turn")
	if f.read("a.txt") != "a2\n" || !strings.HasPrefix(f.read("b.txt"), "<") {
		t.Fatalf("a %q b %q", f.read("a.txt"), f.read("b.txt"))
	}
	evs := f.sink.all()
	last := evs[len(evs)-1]
	if strings.Join(last.Undoes, " ") != "changes-c3 changes-c2" {
		t.Errorf("undoes %v", last.Undoes)
	}
	f.tr.Undo(context.Background(), "turn")
	if f.read("a.txt") != "a1\n" {
		t.Errorf("second /undo turn: a %q", f.read("a.txt"))
	}
	if r := f.tr.Undo(context.Background(), "sideways"); !strings.HasPrefix(r, "Usage") {
		t.Errorf("bad argument: %q", r)
	}
}

// A tracker rebuilt from the journal's events undoes as the live one did,
// and an undo already journaled is not done again.
func TestUndoAfterReplay(t *testing.T) {
	f := newFixture(t)
	f.write("a.txt", "a1\n")
	f.run("c1", "echo a2 > a.txt")
	f.run("c2", "echo a3 > a.txt")
	f.tr.Undo(context.Background(), "")
	journal := f.sink.all()

	g := &fixture{t: t, dir: f.dir, store: f.store, sink: &collector{}}
	g.tr = NewTracker(Options{Dir: f.dir, Store: f.store, Sink: g.sink})
	defer g.tr.Close()
	for _, ev := range journal {
		g.tr.Observe(ev)
	}
	g.tr.Undo(context.Background(), "")
	if g.read("a.txt") != "a1\n" {
		t.Errorf("after reload: a %q, want a1 (c2 already undone, so c1 next)", g.read("a.txt"))
	}
	if r := g.tr.Undo(context.Background(), ""); !strings.HasPrefix(r, "Nothing to undo") {
		t.Errorf("third undo: %q", r)
	}
}

// A journal naming a path outside the directory is refused, not followed.
func TestUndoRefusesPathsOutside(t *testing.T) {
	f := newFixture(t)
	outside := filepath.Join(filepath.Dir(f.dir), "victim.txt")
	if err := os.WriteFile(outside, []byte("safe\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, _ := f.store.Put([]byte("safe\n"))
	f.tr.Observe(event.FileChanges{ID: "changes-evil", Dir: f.dir, Files: []event.FileChange{
		{Path: "../victim.txt", Op: event.ChangeCreated, New: h},
	}})
	reply := f.tr.Undo(context.Background(), "")
	if b, _ := os.ReadFile(outside); string(b) != "safe\n" {
		t.Fatalf("the file outside was touched: %q", b)
	}
	if !strings.Contains(reply, "../victim.txt is not a path under the session's directories; not undone") {
		t.Errorf("reply %q", reply)
	}
}

// A directory replaced by a symlink to elsewhere does not lead an undo out
// of the session's directory.
func TestUndoDoesNotFollowASymlinkOut(t *testing.T) {
	f := newFixture(t)
	outside := filepath.Join(filepath.Dir(f.dir), "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	f.write("sub/x.txt", "x1\n")
	f.run("c1", "rm sub/x.txt")
	// sub becomes a symlink to outside; undoing the rm would recreate
	// sub/x.txt there.
	if err := os.RemoveAll(filepath.Join(f.dir, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(f.dir, "sub")); err != nil {
		t.Fatal(err)
	}
	reply := f.tr.Undo(context.Background(), "")
	if _, err := os.Stat(filepath.Join(outside, "x.txt")); err == nil {
		t.Fatalf("the undo wrote outside the session's directory (reply %q)", reply)
	}
	if !strings.Contains(reply, "sub/x.txt") || !strings.Contains(reply, "not undone") {
		t.Errorf("reply %q", reply)
	}
}
