package changes

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The store grows by at most the bytes of the changed files per change,
// keeps each content once, and refuses a damaged one.
func TestStoreGrowthPerChange(t *testing.T) {
	f := newFixture(t)
	makeTree(t, f.dir, 300, 0)
	if _, ok := f.run("c0", "true"); ok {
		t.Fatal("no change expected")
	}
	before := f.store.Added()
	ev, _ := f.run("c1", "printf 'package p\\n// changed\\n' > src/d0/e0/f3.go && printf 'new file\\n' > n.txt && cp src/d0/e0/f4.go dup.go")
	var changed int64
	for _, c := range ev.Files {
		changed += c.NewSize
	}
	grown := f.store.Added() - before
	t.Logf("store growth %d bytes for %d changed files of %d bytes", grown, len(ev.Files), changed)
	if grown > changed {
		t.Errorf("store grew %d bytes for changes of %d bytes", grown, changed)
	}
	if len(ev.Files) != 3 {
		t.Fatalf("changes %s", summary(ev))
	}
	// dup.go holds what f4.go holds: kept once
	if ev.Files[0].Path != "dup.go" || grown != changed-ev.Files[0].NewSize {
		t.Errorf("a copy of a kept content was written again (grew %d)", grown)
	}
	h := ev.Files[1].New
	p := filepath.Join(f.store.dir, "objects", h[:2], h[2:])
	if err := os.WriteFile(p, []byte("damaged"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Get(h); !errors.Is(err, ErrNotKept) {
		t.Errorf("a damaged content was returned: %v", err)
	}
	if _, err := f.store.Get("../../etc/passwd"); !errors.Is(err, ErrNotKept) {
		t.Errorf("a bad name was looked up: %v", err)
	}
}

// Contents unused for longer than the age are swept; others stay.
func TestStoreSweep(t *testing.T) {
	f := newFixture(t)
	old, _ := f.store.Put([]byte("old content"))
	fresh, _ := f.store.Put([]byte("fresh content"))
	long := time.Now().Add(-40 * 24 * time.Hour)
	if err := os.Chtimes(filepath.Join(f.store.dir, objectName(old)), long, long); err != nil {
		t.Fatal(err)
	}
	st, err := OpenStore(filepath.Dir(f.store.dir), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Get(old); !errors.Is(err, ErrNotKept) {
		t.Errorf("old content survived the sweep: %v", err)
	}
	if b, err := st.Get(fresh); err != nil || string(b) != "fresh content" {
		t.Errorf("fresh content: %q %v", b, err)
	}
}

// A store directory writable by others, or a symlink, is refused.
func TestStoreRefusesUnsafeDir(t *testing.T) {
	state := t.TempDir()
	if err := os.Mkdir(filepath.Join(state, StoreDir), 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(state, StoreDir), 0o777)
	if _, err := OpenStore(state, 0); err == nil || !strings.Contains(err.Error(), "writable") {
		t.Errorf("a world-writable store was opened: %v", err)
	}
	other := t.TempDir()
	state2 := t.TempDir()
	if err := os.Symlink(other, filepath.Join(state2, StoreDir)); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenStore(state2, 0); err == nil {
		t.Error("a symlinked store was opened")
	}
}

// A first look keeps the tree in one pack; a second session's first look
// (another store on the same directory) writes nothing; the contents are
// read back from the pack.
func TestFirstLookPacks(t *testing.T) {
	f := newFixture(t)
	makeTree(t, f.dir, 120, 0)
	if err := f.tr.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	packs, _ := filepath.Glob(filepath.Join(f.store.dir, "packs", "*.pack"))
	loose, _ := filepath.Glob(filepath.Join(f.store.dir, "objects", "*", "*"))
	if len(packs) != 1 || len(loose) != 0 {
		t.Fatalf("%d packs, %d loose contents after the first look", len(packs), len(loose))
	}
	st, err := OpenStore(filepath.Dir(f.store.dir), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tr := NewTracker(Options{Dir: f.dir, Store: st})
	defer tr.Close()
	if err := tr.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st.Added() != 0 {
		t.Errorf("a second first look wrote %d bytes", st.Added())
	}
	want, _ := os.ReadFile(filepath.Join(f.dir, "src/d0/e0/f7.go"))
	if b, err := st.Get(Hash(want)); err != nil || string(b) != string(want) {
		t.Errorf("from the pack: %q %v", b, err)
	}
	// A command's change still finds the old text in the pack.
	ev, _ := f.run("c", "echo new > src/d0/e0/f7.go")
	if len(ev.Files) != 1 || f.text(ev.Files[0].Old) != string(want) {
		t.Errorf("change %+v", ev)
	}
}
