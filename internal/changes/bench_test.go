package changes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func newBenchTracker(b *testing.B, n int) (*Tracker, string) {
	dir := b.TempDir()
	tree := filepath.Join(dir, "tree")
	makeTree(b, tree, n, n/2)
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		b.Fatal(err)
	}
	st, err := OpenStore(state, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return NewTracker(Options{Dir: tree, Store: st, Session: "bench"}), tree // records ownership, as a session does
}

// BenchmarkTrack is what tracking adds to one command that changes one
// file: Begin and End, the stat cache warm.
func BenchmarkTrack(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(sizeName(n), func(b *testing.B) {
			tr, tree := newBenchTracker(b, n)
			ctx := context.Background()
			if err := tr.Wait(ctx); err != nil {
				b.Fatal(err)
			}
			f := filepath.Join(tree, "src/d0/e1/f25.go")
			time.Sleep(2 * racySlack)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := tr.Begin(ctx); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				os.WriteFile(f, []byte{byte('a' + i%26)}, 0o644)
				b.StartTimer()
				tr.End("c")
			}
		})
	}
}

// BenchmarkFirstSnapshot is the first snapshot of a tree: every file read
// and kept.
func BenchmarkFirstSnapshot(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		tr, _ := newBenchTracker(b, 10000)
		b.StartTimer()
		if _, _, err := tr.roots[0].sc.first(); err != nil {
			b.Fatal(err)
		}
	}
}

func sizeName(n int) string {
	if n >= 1000 {
		return itoa(n/1000) + "k"
	}
	return itoa(n)
}

func itoa(n int) string { return fmt.Sprint(n) }

// BenchmarkFirstSnapshotKept is the first snapshot of a tree whose
// contents the store already holds (a second session in the same project).
func BenchmarkFirstSnapshotKept(b *testing.B) {
	tr, _ := newBenchTracker(b, 10000)
	if _, _, err := tr.roots[0].sc.first(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tr.roots[0].sc.ignore = newIgnorer(tr.opt.Dir)
		if _, _, err := tr.roots[0].sc.first(); err != nil {
			b.Fatal(err)
		}
	}
}
