package changes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// addRoot makes a directory next to the fixture's project, sets it as an
// additional directory and waits until the tracker has taken it up.
func (f *fixture) addRoot(name string) string {
	f.t.Helper()
	dir := filepath.Join(filepath.Dir(f.dir), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.t.Fatal(err)
	}
	f.tr.SetRoots([]string{dir})
	return dir
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return "<missing>"
	}
	return string(b)
}

// A command's writes in an additional directory are its changes, named by
// absolute path (a file of the same name in the session's directory is
// another path), with their contents kept; /undo puts them back on disk,
// in both trees, live and from a replayed history.
func TestAdditionalDirectoryChangesAndUndo(t *testing.T) {
	for _, watch := range []bool{true, false} {
		t.Run(map[bool]string{true: "watching", false: "looking at every file"}[watch], func(t *testing.T) {
			f := newFixture(t)
			if !watch {
				f.tr.opt.NoWatch = true
				f.tr.roots[0].sc.noWatch = true
			}
			second := f.addRoot("second")
			writeFile(t, filepath.Join(second, "f.txt"), "before\n")
			f.write("f.txt", "main\n")
			ev, ok := f.run("c1", "echo after > "+second+"/f.txt; echo new > "+second+"/sub/n.txt 2>/dev/null || (mkdir "+second+"/sub && echo new > "+second+"/sub/n.txt); echo main2 > f.txt")
			if !ok {
				t.Fatal("no change seen")
			}
			want := "modified f.txt, modified " + second + "/f.txt, created " + second + "/sub/n.txt"
			if got := summary(ev); got != want {
				t.Fatalf("changes %q, want %q", got, want)
			}
			for _, c := range ev.Files {
				if c.Path == second+"/f.txt" && (f.text(c.Old) != "before\n" || f.text(c.New) != "after\n") {
					t.Errorf("second/f.txt %q → %q", f.text(c.Old), f.text(c.New))
				}
			}
			if got := f.tr.Roots(); len(got) != 2 || got[1] != second {
				t.Errorf("roots %q", got)
			}

			// The history replayed into a fresh tracker of the same roots
			// (session/load) undoes it the same.
			tr2 := NewTracker(Options{Dir: f.dir, Store: f.store, NoWatch: !watch})
			t.Cleanup(tr2.Close)
			tr2.SetRoots([]string{second})
			tr2.Observe(event.UserPrompt{})
			tr2.Observe(ev)
			reply := tr2.Undo(context.Background(), "")
			if !strings.Contains(reply, "Undone: 3 files put back") {
				t.Errorf("reply %q", reply)
			}
			if got := readFile(filepath.Join(second, "f.txt")); got != "before\n" {
				t.Errorf("second/f.txt after /undo: %q", got)
			}
			if _, err := os.Stat(filepath.Join(second, "sub", "n.txt")); !os.IsNotExist(err) {
				t.Errorf("second/sub/n.txt still there after /undo: %v", err)
			}
			if got := f.read("f.txt"); got != "main\n" {
				t.Errorf("f.txt after /undo: %q", got)
			}
		})
	}
}

// A change recorded in a directory the session no longer has is not
// undone (no write outside the tracked trees), nor is a path that climbs
// out of an additional directory.
func TestUndoStaysInTrackedRoots(t *testing.T) {
	f := newFixture(t)
	second := f.addRoot("second")
	victim := filepath.Join(filepath.Dir(f.dir), "victim.txt")
	writeFile(t, victim, "safe\n")
	writeFile(t, filepath.Join(second, "g.txt"), "g1\n")
	ev, ok := f.run("c1", "echo g2 > "+second+"/g.txt")
	if !ok {
		t.Fatal("no change seen")
	}
	h, _ := f.store.Put([]byte("planted\n"))
	f.tr.Observe(event.FileChanges{ID: "changes-evil", Dir: f.dir, Files: []event.FileChange{
		{Path: second + "/../victim.txt", Op: event.ChangeModified, Old: h, New: h},
	}})
	if reply := f.tr.Undo(context.Background(), ""); !strings.Contains(reply, "is not a path under the session's directories") {
		t.Errorf("reply %q", reply)
	}
	if got := readFile(victim); got != "safe\n" {
		t.Fatalf("the file outside was written: %q", got)
	}

	f.tr.SetRoots(nil) // the folder left the project
	f.tr.Begin(context.Background())
	reply := f.tr.Undo(context.Background(), "")
	if got := readFile(filepath.Join(second, "g.txt")); got != "g2\n" {
		t.Errorf("a directory no longer the session's was written by /undo: %q (reply %q)", got, reply)
	}
	if !strings.Contains(reply, second+"/g.txt is not a path under the session's directories") {
		t.Errorf("reply %q (event %+v)", reply, ev)
	}
}

// Nested roots are tracked once: an additional directory inside the
// session's directory is covered by it (relative paths), and the session's
// directory inside an additional one is left out of that one.
func TestNestedRootsTrackedOnce(t *testing.T) {
	f := newFixture(t)
	inner := filepath.Join(f.dir, "inner")
	writeFile(t, filepath.Join(inner, "a.txt"), "a\n")
	f.tr.SetRoots([]string{inner, filepath.Dir(f.dir)})
	ev, _ := f.run("c1", "echo b > inner/a.txt; echo top > ../top.txt")
	want := filepath.ToSlash(filepath.Dir(f.dir)) + "/top.txt"
	if got := summary(ev); got != "modified inner/a.txt, created "+want {
		t.Errorf("changes %q", got)
	}
	if got := f.tr.Roots(); len(got) != 2 || got[1] != filepath.Dir(f.dir) {
		t.Errorf("roots %q", got)
	}
}
