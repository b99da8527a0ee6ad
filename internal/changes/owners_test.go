package changes

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// session is one tracked session of a test: its directory and tracker.
type session struct {
	t   *testing.T
	dir string
	tr  *Tracker
}

func newSession(t *testing.T, st *Store, id string, files map[string]string) *session {
	t.Helper()
	dir := filepath.Join(t.TempDir(), id)
	for rel, c := range files {
		writeFile(t, filepath.Join(dir, rel), c)
	}
	s := &session{t: t, dir: dir, tr: NewTracker(Options{Dir: dir, Store: st, Session: id})}
	t.Cleanup(s.tr.Close)
	if err := s.tr.Wait(context.Background()); err != nil { // the first look, as Prime takes it
		t.Fatal(err)
	}
	return s
}

// run runs command in the session's directory, tracked.
func (s *session) run(id, command string) {
	s.t.Helper()
	if err := s.tr.Begin(context.Background()); err != nil {
		s.t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", command)
	cmd.Dir = s.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		s.t.Fatalf("%s: %v\n%s", command, err, out)
	}
	if _, ok := s.tr.End(id); !ok {
		s.t.Fatalf("%s changed nothing", command)
	}
}

// storeHolds reports whether any file under the store directory holds
// needle: judged on disk, whatever the store's indexes say.
func storeHolds(t *testing.T, st *Store, needle string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(st.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(needle)) {
			found = append(found, strings.TrimPrefix(p, st.dir))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func openStore(t *testing.T, state string) *Store {
	t.Helper()
	st, err := OpenStore(state, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Forget (session/delete) removes from disk every content only the
// deleted session used — those its first look packed and those its
// commands wrote — and keeps what another session uses: a content both
// trees hold, which the other session's first look found in the deleted
// session's pack, stays readable (as a loose content), also to another
// daemon's store whose pack index predates the removal, and the other
// session's cards and /undo still find it.
func TestForgetRemovesWhatOnlyTheSessionUsed(t *testing.T) {
	state := t.TempDir()
	os.Chmod(state, 0o700)
	st := openStore(t, state)
	other := openStore(t, state) // another daemon on the same state dir
	a := newSession(t, st, "A", map[string]string{"secret.txt": "secret-of-A v1\n", "shared.txt": "shared by both\n"})
	a.run("a1", "echo secret-of-A v2 > secret.txt; echo secret-of-A new > new.txt")
	b := newSession(t, other, "B", map[string]string{"shared.txt": "shared by both\n", "b.txt": "only B\n"})
	if other.Added() != int64(len("only B\n")) {
		t.Fatalf("B's first look wrote %d bytes: the shared content was not found in A's pack", other.Added())
	}
	if got := storeHolds(t, st, "secret-of-A"); len(got) < 2 {
		t.Fatalf("A's contents not kept before the delete: %q", got)
	}

	removed, err := st.Forget("A")
	if err != nil {
		t.Fatal(err)
	}
	if got := storeHolds(t, st, "secret-of-A"); len(got) != 0 {
		t.Errorf("after Forget(A) the store still holds A's contents in %q", got)
	}
	if removed != 3 {
		t.Errorf("removed %d contents, want 3 (v1, v2, new)", removed)
	}
	if _, err := os.Stat(filepath.Join(st.dir, ownersDir, "A")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("A's records remain: %v", err)
	}
	for _, c := range []string{"shared by both\n", "only B\n"} {
		for name, s := range map[string]*Store{"this daemon": st, "the other daemon": other} {
			if got, err := s.Get(Hash([]byte(c))); err != nil || string(got) != c {
				t.Errorf("%s: B's content %q: %q, %v", name, c, got, err)
			}
		}
	}
	b.run("b1", "echo changed > shared.txt")
	if reply := b.tr.Undo(context.Background(), ""); !strings.Contains(reply, "Undone: 1 file") {
		t.Errorf("B's /undo after A's delete: %q", reply)
	}
	if got := readFile(filepath.Join(b.dir, "shared.txt")); got != "shared by both\n" {
		t.Errorf("shared.txt after B's /undo: %q", got)
	}

	// The other daemon's store believed A's contents held; after the
	// Forget a look there keeps them again when a tree holds them.
	c := newSession(t, other, "C", map[string]string{"x.txt": "secret-of-A v1\n"})
	if got, err := other.Get(Hash([]byte("secret-of-A v1\n"))); err != nil || string(got) != "secret-of-A v1\n" {
		t.Errorf("a content forgotten then seen again by another daemon is not kept: %q, %v (%s)", got, err, c.dir)
	}
	if n, err := st.Forget("never-tracked"); n != 0 || err != nil {
		t.Errorf("Forget of a session without records: %d, %v", n, err)
	}
}

// The age sweep takes the ownership records of a session not tracked
// since the cutoff, and the contents they named (nothing else uses them);
// a session tracked since keeps both.
func TestSweepTakesOldRecords(t *testing.T) {
	state := t.TempDir()
	os.Chmod(state, 0o700)
	st := openStore(t, state)
	newSession(t, st, "old", map[string]string{"f.txt": "old session's file\n"})
	newSession(t, st, "new", map[string]string{"g.txt": "new session's file\n"})
	long := time.Now().Add(-40 * 24 * time.Hour)
	oldFiles := []string{filepath.Join(st.dir, ownersDir, "old")}
	packs, _ := filepath.Glob(filepath.Join(st.dir, "packs", "*.pack"))
	for _, p := range packs {
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte("old session's file")) {
			oldFiles = append(oldFiles, p)
		}
	}
	for _, p := range oldFiles {
		if err := os.Chtimes(p, long, long); err != nil {
			t.Fatal(err)
		}
	}
	st.Sweep(time.Now().Add(-DefaultMaxAge)) // the cutoff is the clock
	if got := storeHolds(t, st, "old session's file"); len(got) != 0 {
		t.Errorf("the old session's content survived the sweep in %q", got)
	}
	if _, err := os.Stat(oldFiles[0]); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the old session's records survived the sweep: %v", err)
	}
	if _, err := os.Stat(filepath.Join(st.dir, ownersDir, "new")); err != nil {
		t.Errorf("the new session's records were swept: %v", err)
	}
}
