package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/changes"
)

// changesRows measure change tracking (internal/changes) in process, on
// generated trees of text files (20 to a directory, plus an ignored build/
// directory of as many files again, which must cost nothing): what
// tracking adds to a command that changes one file; the first look of a tree, with an empty store and with one that
// already holds the tree (a second session in the same project); and the
// store's growth for a change, against the changed files' bytes.
func changesRows(h *harness) ([]row, error) {
	var rows []row
	for _, noWatch := range []bool{false, true} {
		for _, n := range []int{h.opt.changesFiles / 10, h.opt.changesFiles} {
			r, err := trackingRow(h, n, map[bool]float64{true: 15, false: 3}[n >= 10000], noWatch)
			if err != nil {
				return nil, err
			}
			rows = append(rows, r)
		}
	}
	first, err := firstLookRows(h, h.opt.changesFiles)
	if err != nil {
		return nil, err
	}
	rows = append(rows, first...)
	growth, err := growthRow(h)
	if err != nil {
		return nil, err
	}
	return append(rows, growth), nil
}

// changesTree is a tracker over a generated tree of n files.
type changesTree struct {
	dir   string
	store *changes.Store
	tr    *changes.Tracker
}

func newChangesTree(h *harness, n int, noWatch bool) (*changesTree, error) {
	base, err := os.MkdirTemp(h.work, "changes-")
	if err != nil {
		return nil, err
	}
	dir, state := filepath.Join(base, "tree"), filepath.Join(base, "state")
	if err := writeTree(dir, n); err != nil {
		return nil, err
	}
	if err := os.Mkdir(state, 0o700); err != nil {
		return nil, err
	}
	st, err := changes.OpenStore(state, 0)
	if err != nil {
		return nil, err
	}
	return &changesTree{dir: dir, store: st, tr: changes.NewTracker(changes.Options{Dir: dir, Store: st, NoWatch: noWatch})}, nil
}

func (c *changesTree) close() {
	c.tr.Close()
	c.store.Close()
}

// writeTree writes n small Go files and n ignored ones under dir.
func writeTree(dir string, n int) error {
	write := func(rel, content string) error {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, []byte(content), 0o644)
	}
	if err := write(".gitignore", "build/\n"); err != nil {
		return err
	}
	for i := 1; i < n; i++ {
		d := i / 20
		if err := write(fmt.Sprintf("src/d%d/e%d/f%d.go", d/10, d%10, i), fmt.Sprintf("package p\n\nfunc F%d() int { return %d }\n", i, i)); err != nil {
			return err
		}
		if err := write(fmt.Sprintf("build/g%d/x%d.o", i/50, i), "object"); err != nil {
			return err
		}
	}
	return nil
}

// trackingRow: what tracking adds to a command that rewrites one file, with
// inotify or with the stat cache alone (as on macOS) —
// Begin before it and End after it, timed apart from the command (a bash
// start costs more than the tracking and varies more on a busy machine,
// which would drown the figure in a paired difference) — over four times
// the runs asked for.
func trackingRow(h *harness, n int, limitMs float64, noWatch bool) (row, error) {
	c, err := newChangesTree(h, n, noWatch)
	if err != nil {
		return row{}, err
	}
	defer c.close()
	ctx := context.Background()
	if err := c.tr.Wait(ctx); err != nil {
		return row{}, err
	}
	var added samples
	for i := range 4 * h.opt.runs {
		start := time.Now()
		if err := c.tr.Begin(ctx); err != nil {
			return row{}, err
		}
		begin := time.Since(start)
		cmd := exec.Command("bash", "-c", fmt.Sprintf("echo %d > src/d0/e0/f1.go", i))
		cmd.Dir = c.dir
		if err := cmd.Run(); err != nil {
			return row{}, err
		}
		start = time.Now()
		if _, ok := c.tr.End("bench"); !ok {
			return row{}, fmt.Errorf("tracking saw no change")
		}
		added = append(added, ms(begin+time.Since(start)))
	}
	how := "inotify"
	if noWatch {
		how = "stat cache, no inotify"
	}
	return boundRow(fmt.Sprintf("changes: tracking a command, %s files (warm, %s): p50 added", thousands(n), how), "ms", added, limitMs), nil
}

// firstLookRows: the first look of a tree, into an empty store and into
// one that holds the tree already.
func firstLookRows(h *harness, n int) ([]row, error) {
	var cold, coldCPU, kept samples
	for range h.runs(5) {
		c, err := newChangesTree(h, n, false)
		if err != nil {
			return nil, err
		}
		for _, s := range []*samples{&cold, &kept} {
			tr := changes.NewTracker(changes.Options{Dir: c.dir, Store: c.store})
			start, cpu := time.Now(), cpuTime()
			err := tr.Wait(context.Background())
			*s = append(*s, ms(time.Since(start)))
			if s == &cold {
				coldCPU = append(coldCPU, ms(cpuTime()-cpu))
			}
			tr.Close()
			if err != nil {
				return nil, err
			}
		}
		c.close()
	}
	return []row{
		boundRow(fmt.Sprintf("changes: first look of %s files, empty store", thousands(n)), "ms", cold, 250),
		boundRow(fmt.Sprintf("changes: first look of %s files, empty store: CPU time", thousands(n)), "ms", coldCPU, 250),
		boundRow(fmt.Sprintf("changes: first look of %s files, contents kept", thousands(n)), "ms", kept, 250),
	}, nil
}

// growthRow: what the store grows by for a change of three files (one
// modified, one created, one a copy of a kept content), against the bytes
// of the changed files.
func growthRow(h *harness) (row, error) {
	c, err := newChangesTree(h, 200, false)
	if err != nil {
		return row{}, err
	}
	defer c.close()
	ctx := context.Background()
	i := 0
	grown := func() (float64, float64, error) {
		i++
		if err := c.tr.Begin(ctx); err != nil {
			return 0, 0, err
		}
		before := c.store.Added()
		cmd := exec.Command("bash", "-c", fmt.Sprintf("seq %d > src/d0/e0/f3.go; seq %d > new%d.txt; cp src/d0/e0/f4.go copy%d.go", 100+i, 50+i, i, i))
		cmd.Dir = c.dir
		if err := cmd.Run(); err != nil {
			return 0, 0, err
		}
		ev, _ := c.tr.End("bench")
		var changed int64
		for _, f := range ev.Files {
			changed += f.NewSize
		}
		return float64(c.store.Added() - before), float64(changed), nil
	}
	var p pairs
	for range h.opt.runs {
		g, ch, err := grown()
		if err != nil {
			return row{}, err
		}
		p.subject, p.baseline = append(p.subject, g), append(p.baseline, ch)
	}
	return ratioRow("changes: store growth per change / changed files' bytes", "bytes", p, 1, false), nil
}

// cpuTime is the user and system time this process used so far (the
// first look's figure without the time a busy machine gives to others).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func thousands(n int) string {
	if n >= 1000 && n%1000 == 0 {
		return fmt.Sprintf("%d %03d", n/1000, 0)
	}
	return fmt.Sprint(n)
}
