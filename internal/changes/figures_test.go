package changes

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// The figures of a warm look, counted rather than timed: with inotify, a
// command that changed one file of 2 000 stats and reads that file alone,
// and one that changed nothing stats nothing; with the stat cache alone it
// stats every file and still reads only the changed one.
func TestLookCosts(t *testing.T) {
	for _, noWatch := range []bool{false, true} {
		f := newFixture(t)
		f.tr.Close()
		f.tr = NewTracker(Options{Dir: f.dir, Store: f.store, Sink: f.sink, NoWatch: noWatch})
		defer f.tr.Close()
		makeTree(t, f.dir, 2000, 500)
		ctx := context.Background()
		if err := f.tr.Begin(ctx); err != nil {
			t.Fatal(err)
		}
		if f.tr.roots[0].sc.w == nil && !noWatch {
			t.Skip("inotify is not available here")
		}
		f.tr.End("warm-up")
		f.tr.roots[0].sc.racyAt = 0
		for p, e := range f.tr.roots[0].base.files {
			e.racy = false
			f.tr.roots[0].base.files[p] = e
		}
		for _, ds := range f.tr.roots[0].base.dirs {
			ds.racy = false
		}
		stats, reads := f.tr.roots[0].sc.stats, f.tr.roots[0].sc.reads
		if err := f.tr.Begin(ctx); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(f.dir, "src/d0/e0/f7.go"), []byte("changed\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		ev, _ := f.tr.End("c")
		gotStats, gotReads := f.tr.roots[0].sc.stats-stats, f.tr.roots[0].sc.reads-reads
		if len(ev.Files) != 1 || gotReads != 1 {
			t.Errorf("noWatch=%v: %d changes, %d reads", noWatch, len(ev.Files), gotReads)
		}
		wantStats := 1
		if noWatch {
			wantStats = 2 * 2000 // Begin and End each stat every file (the build/ files never)
		}
		if gotStats > wantStats {
			t.Errorf("noWatch=%v: %d files stat'ed, want at most %d", noWatch, gotStats, wantStats)
		}
		t.Logf("noWatch=%v: one changed file of 2 000: %d stats, %d reads", noWatch, gotStats, gotReads)
	}
}

// The first look keeps at most MaxFirst bytes; the files past them are
// tracked by stat, and their changes listed as not kept.
func TestFirstLookBudget(t *testing.T) {
	f := newFixture(t)
	f.tr.Close()
	f.tr = NewTracker(Options{Dir: f.dir, Store: f.store, Sink: f.sink, MaxFirst: 1000})
	defer f.tr.Close()
	makeTree(t, f.dir, 100, 0)
	if err := f.tr.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.store.Added(); got > 1000 {
		t.Errorf("the first look kept %d bytes, more than its 1000", got)
	}
	var notKept string
	for p, e := range f.tr.roots[0].base.files {
		if e.hash == "" {
			notKept = p
			break
		}
	}
	if notKept == "" {
		t.Fatal("every file was kept")
	}
	ev, _ := f.run("c", "echo x >> "+notKept)
	if len(ev.Files) != 1 || !ev.Files[0].Large || ev.Files[0].New != "" && ev.Files[0].Old != "" {
		t.Errorf("change of a file past the budget: %+v", ev.Files)
	}
}
