package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/dsh-acp/dsh-acp/executor"
)

func TestRing(t *testing.T) {
	tests := []struct {
		name   string
		size   int
		writes []string
		want   string
	}{
		{name: "empty", size: 4},
		{name: "fits", size: 8, writes: []string{"ab", "cd"}, want: "abcd"},
		{name: "exactly full", size: 4, writes: []string{"ab", "cd"}, want: "abcd"},
		{name: "wraps", size: 4, writes: []string{"abc", "def"}, want: "cdef"},
		{name: "wraps twice", size: 4, writes: []string{"abc", "def", "gh", "i"}, want: "fghi"},
		{name: "one huge write", size: 4, writes: []string{"a", "0123456789"}, want: "6789"},
		{name: "huge then small", size: 4, writes: []string{"0123456789", "ab"}, want: "89ab"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRing(tc.size)
			all := ""
			for _, w := range tc.writes {
				r.write([]byte(w))
				all += w
			}
			if got := string(r.bytes()); got != tc.want {
				t.Errorf("bytes = %q, want %q", got, tc.want)
			}
			defer func() {
				total := r.total
				if got := string(r.take()); got != tc.want || r.kept() != 0 || r.total != total {
					t.Errorf("take = %q, want %q; then kept %d total %d", got, tc.want, r.kept(), r.total)
				}
			}()
			if r.total != int64(len(all)) || cap(r.buf) > tc.size {
				t.Errorf("total %d cap %d", r.total, cap(r.buf))
			}
			for off := int64(0); off <= r.total; off++ {
				data, lost := r.since(off)
				wantLost := max(0, r.start()-off)
				if string(data) != all[off+wantLost:] || lost != wantLost {
					t.Errorf("since(%d) = %q lost %d", off, data, lost)
				}
			}
		})
	}
}

func TestRingStaysBounded(t *testing.T) {
	r := newRing(1000)
	chunk := bytes.Repeat([]byte("z"), 333)
	for range 10000 {
		r.write(chunk)
	}
	if cap(r.buf) != 1000 || r.kept() != 1000 || r.total != 3330000 {
		t.Errorf("cap %d kept %d total %d", cap(r.buf), r.kept(), r.total)
	}
}

func TestCaptureQuietCommandTouchesNoDisk(t *testing.T) {
	state := t.TempDir()
	e := newTestExecutor(t, Config{StateDir: state, CaptureBytes: 1024})
	res := run(t, e, resolve(t, e, "head -c 1024 /dev/zero"))
	if res.Truncated() || res.SpillPath != "" || len(res.Stdout) != 1024 {
		t.Errorf("dropped %d spill %q stdout %d", res.Dropped, res.SpillPath, len(res.Stdout))
	}
	if entries, _ := os.ReadDir(filepath.Join(state, "spill")); len(entries) != 0 {
		t.Errorf("spill dir not empty: %v", entries)
	}
}

// Output past SpillAfter but within the ring is all in memory, and also in
// a complete spill file, so a caller that cuts the text can name the file.
func TestCaptureSpillsPastThresholdWithoutDropping(t *testing.T) {
	state := t.TempDir()
	e := newTestExecutor(t, Config{StateDir: state, CaptureBytes: 64 << 10, SpillAfter: 4096})
	res := run(t, e, resolve(t, e, "seq 1 5000"))
	if res.Truncated() || res.SpillPath == "" {
		t.Fatalf("dropped %d spill %q", res.Dropped, res.SpillPath)
	}
	full, err := os.ReadFile(res.SpillPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(full, res.Combined) || strings.Count(string(full), "\n") != 5000 {
		t.Errorf("spill has %d bytes, combined %d", len(full), len(res.Combined))
	}
}

func TestCaptureSpill(t *testing.T) {
	state := t.TempDir()
	const capture, total = 64 << 10, 3 << 20
	e := newTestExecutor(t, Config{StateDir: state, CaptureBytes: capture})
	// Numbered lines on both streams: the spill must hold every one, once.
	cmd := fmt.Sprintf(`seq 1 %d | sed 's/^/out /'; seq 1 1000 | sed 's/^/err /' >&2`, total/8)
	spec := resolve(t, e, cmd)
	spec.Owner = "session/with:odd chars"
	res := run(t, e, spec)
	if len(res.Stdout) != capture || len(res.Combined) != capture || len(res.Stderr) == 0 {
		t.Fatalf("stdout %d combined %d stderr %d, want the %d-byte tails", len(res.Stdout), len(res.Combined), len(res.Stderr), capture)
	}
	if res.SpillPath == "" || !res.Truncated() {
		t.Fatalf("spill %q dropped %d", res.SpillPath, res.Dropped)
	}
	full, err := os.ReadFile(res.SpillPath)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(full)) != res.Dropped+int64(len(res.Combined)) || !bytes.HasSuffix(full, res.Combined) {
		t.Errorf("spill has %d bytes, want %d ending in the tail", len(full), res.Dropped+int64(len(res.Combined)))
	}
	var outs, errs int
	for _, line := range strings.Split(strings.TrimSpace(string(full)), "\n") {
		switch {
		case strings.HasPrefix(line, "out "):
			outs++
		case strings.HasPrefix(line, "err "):
			errs++
		}
	}
	if outs != total/8 || errs != 1000 {
		t.Errorf("spill has %d out and %d err lines", outs, errs)
	}
	requireMode(t, res.SpillPath, 0o600)
	requireMode(t, filepath.Dir(res.SpillPath), 0o700|os.ModeDir)
	requireMode(t, filepath.Join(state, "spill"), 0o700|os.ModeDir)
	if rel, _ := filepath.Rel(filepath.Join(state, "spill"), res.SpillPath); strings.Count(rel, "/") != 1 {
		t.Errorf("spill %q is not one level below the spill root", rel)
	}
}

func requireMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != want {
		t.Errorf("%s: mode %v, want %v", path, fi.Mode(), want)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != os.Geteuid() {
		t.Errorf("%s: owner %d", path, st.Uid)
	}
}

func TestCaptureSpillCap(t *testing.T) {
	state := t.TempDir()
	e := newTestExecutor(t, Config{StateDir: state, CaptureBytes: 64 << 10, SpillCap: 1 << 20})
	res := run(t, e, resolve(t, e, "head -c 3000000 /dev/zero"))
	if res.SpillPath != "" || res.Dropped != 3000000-64<<10 || res.SpillError != "" {
		t.Errorf("spill %q dropped %d error %q (the cap is not a failure)", res.SpillPath, res.Dropped, res.SpillError)
	}
	if files := spillFiles(t, state); len(files) != 0 {
		t.Errorf("incomplete spill files left: %v", files)
	}
}

// A spill directory someone else could control is refused as the sessions
// directory is: the engine starts, the log says why, commands run, their
// results name no spill file and say why, and nothing is written into the
// hostile directory.
func TestSpillDirRefusesHostile(t *testing.T) {
	tests := []struct {
		name   string
		reason string
		// plant makes state/spill hostile and returns a directory that must
		// stay empty ("" when there is none).
		plant func(t *testing.T, spill string) (watch string)
	}{
		{name: "symlink", reason: "is a symlink", plant: func(t *testing.T, spill string) string {
			target := t.TempDir()
			if err := os.Symlink(target, spill); err != nil {
				t.Fatal(err)
			}
			return target
		}},
		{name: "world writable", reason: "is writable by its group or others (mode 0777)", plant: func(t *testing.T, spill string) string {
			mkdirMode(t, spill, 0o777)
			return spill
		}},
		{name: "group writable", reason: "is writable by its group or others (mode 0770)", plant: func(t *testing.T, spill string) string {
			mkdirMode(t, spill, 0o770)
			return spill
		}},
		{name: "a file", reason: "is not a directory", plant: func(t *testing.T, spill string) string {
			if err := os.WriteFile(spill, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return ""
		}},
		{name: "another owner", reason: "is owned by uid 65534", plant: func(t *testing.T, spill string) string {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give the spill directory to another user")
			}
			mkdirMode(t, spill, 0o700)
			if err := os.Chown(spill, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			return spill
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			spill := filepath.Join(state, "spill")
			watch := tc.plant(t, spill)
			core, logs := observer.New(zap.WarnLevel)
			e := newTestExecutor(t, Config{StateDir: state, CaptureBytes: 1024, Logger: zap.New(core)})
			res := run(t, e, resolve(t, e, "head -c 5000 /dev/zero"))
			if res.SpillPath != "" || res.Dropped != 5000-1024 {
				t.Errorf("spill %q, dropped %d", res.SpillPath, res.Dropped)
			}
			if !strings.Contains(res.SpillError, tc.reason) || !strings.Contains(res.SpillError, spill) {
				t.Errorf("spill error %q, want the directory and %q", res.SpillError, tc.reason)
			}
			if _, err := e.SpillText("alice", "mcp-x-1", []byte("text")); !errors.Is(err, ErrUnsafeDir) {
				t.Errorf("SpillText: %v, want ErrUnsafeDir", err)
			}
			if n := logs.FilterMessageSnippet("spill directory refused").FilterFieldKey("error").Len(); n != 1 {
				t.Errorf("the refusal was logged %d times, want once: %v", n, logs.All())
			}
			if watch != "" {
				if entries, _ := os.ReadDir(watch); len(entries) != 0 {
					t.Errorf("wrote into the hostile directory: %v", entries)
				}
			}
		})
	}
}

// The spill directory swapped for a symlink while the engine runs (its
// root still holds the old directory, but the model would be given a path
// through the new one) is refused at the next spill; a safe directory in
// its place is used again.
func TestSpillDirSwappedUnderTheEngine(t *testing.T) {
	state := t.TempDir()
	e := newTestExecutor(t, Config{StateDir: state, CaptureBytes: 1024})
	spill := filepath.Join(state, "spill")
	if res := run(t, e, resolve(t, e, "head -c 5000 /dev/zero")); res.SpillPath == "" {
		t.Fatalf("no spill before the swap: %q", res.SpillError)
	}
	if err := os.Rename(spill, filepath.Join(state, "spill.old")); err != nil {
		t.Fatal(err)
	}
	target := t.TempDir()
	if err := os.Symlink(target, spill); err != nil {
		t.Fatal(err)
	}
	res := run(t, e, resolve(t, e, "head -c 5000 /dev/zero"))
	if res.SpillPath != "" || !strings.Contains(res.SpillError, "is a symlink") {
		t.Errorf("after the swap: spill %q, error %q", res.SpillPath, res.SpillError)
	}
	if entries, _ := os.ReadDir(target); len(entries) != 0 {
		t.Errorf("wrote through the symlink: %v", entries)
	}
	var old []string
	_ = filepath.WalkDir(filepath.Join(state, "spill.old"), func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			old = append(old, path)
		}
		return nil
	})
	if len(old) != 1 {
		t.Errorf("the replaced directory holds %v, want the one file from before the swap", old)
	}

	if err := os.Remove(spill); err != nil {
		t.Fatal(err)
	}
	mkdirMode(t, spill, 0o700)
	res = run(t, e, resolve(t, e, "head -c 5000 /dev/zero"))
	if res.SpillPath == "" || !strings.HasPrefix(res.SpillPath, spill+string(filepath.Separator)) {
		t.Errorf("a safe directory in its place is not used: spill %q, error %q", res.SpillPath, res.SpillError)
	}
}

func TestSpillDirTightensOwnMode(t *testing.T) {
	state := t.TempDir()
	mkdirMode(t, filepath.Join(state, "spill"), 0o755)
	newTestExecutor(t, Config{StateDir: state})
	requireMode(t, filepath.Join(state, "spill"), 0o700|os.ModeDir)
}

func mkdirMode(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// A planted symlink in place of an owner's directory must not be written
// through: the spill is unavailable, the capture still works.
func TestSpillOwnerDirSymlink(t *testing.T) {
	state := t.TempDir()
	e := newTestExecutor(t, Config{StateDir: state, CaptureBytes: 1024})
	victim := filepath.Join(state, "spill", "victim")
	mkdirMode(t, victim, 0o700)
	if err := os.Symlink("victim", filepath.Join(state, "spill", ownerDirName("alice"))); err != nil {
		t.Fatal(err)
	}
	spec := resolve(t, e, "head -c 5000 /dev/zero")
	spec.Owner = "alice"
	res := run(t, e, spec)
	if res.SpillPath != "" || res.Dropped != 5000-1024 || len(res.Stdout) != 1024 {
		t.Errorf("spill %q dropped %d stdout %d", res.SpillPath, res.Dropped, len(res.Stdout))
	}
	if entries, _ := os.ReadDir(victim); len(entries) != 0 {
		t.Errorf("wrote through the symlink: %v", entries)
	}
}

func TestSpillSweep(t *testing.T) {
	state := t.TempDir()
	e := newTestExecutor(t, Config{StateDir: state, CaptureBytes: 1024})
	var paths []string
	for _, owner := range []string{"a", "b"} {
		spec := resolve(t, e, "head -c 4096 /dev/zero")
		spec.Owner = owner
		paths = append(paths, run(t, e, spec).SpillPath)
	}
	old := time.Now().Add(-8 * 24 * time.Hour)
	if err := os.Chtimes(paths[0], old, old); err != nil {
		t.Fatal(err)
	}
	newTestExecutor(t, Config{StateDir: state})
	if _, err := os.Stat(paths[0]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("old spill survived the sweep: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(paths[0])); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("empty owner dir survived the sweep: %v", err)
	}
	if _, err := os.Stat(paths[1]); err != nil {
		t.Errorf("fresh spill was swept: %v", err)
	}
}

func TestOwnerDirName(t *testing.T) {
	tests := map[string]string{
		"":                      "unowned",
		"sess_1-a.b":            "o-sess_1-a.b",
		"..":                    "o-..",
		"a/b":                   "h-",
		"../../etc":             "h-",
		"with space":            "h-",
		strings.Repeat("x", 65): "h-",
	}
	for owner, prefix := range tests {
		got := ownerDirName(owner)
		if !strings.HasPrefix(got, prefix) || strings.ContainsAny(got, "/ ") || got == "." || got == ".." {
			t.Errorf("ownerDirName(%q) = %q, want prefix %q", owner, got, prefix)
		}
	}
	if ownerDirName("a/b") == ownerDirName("a/c") {
		t.Error("distinct owners share a directory")
	}
}

func TestLiveDelivery(t *testing.T) {
	var got []executor.Chunk
	c := newCapture(captureOpts{size: 8, streams: true, log: zap.NewNop()})
	l := newLive(func(c executor.Chunk) {
		got = append(got, executor.Chunk{Stream: c.Stream, Data: bytes.Clone(c.Data), Dropped: c.Dropped})
	}, c)
	c.write(executor.Stdout, []byte("ab"))
	c.write(executor.Stderr, []byte("cd"))
	l.close()
	<-l.finished
	var out bytes.Buffer
	for _, c := range got {
		out.Write(c.Data)
	}
	if out.String() != "abcd" || got[len(got)-1].Stream != executor.Stderr || got[0].Stream != executor.Stdout {
		t.Errorf("delivered %+v", got)
	}
}

// An observer that falls behind by more than the ring loses the oldest
// bytes, counted in Dropped; it gets the newest.
func TestLiveDropsWhatTheRingLost(t *testing.T) {
	c := newCapture(captureOpts{size: 8, streams: true, log: zap.NewNop()})
	entered, release := make(chan struct{}), make(chan struct{})
	var data bytes.Buffer
	var dropped int64
	first := true
	l := newLive(func(ch executor.Chunk) {
		if first {
			first = false
			close(entered)
			<-release
		}
		data.Write(ch.Data)
		dropped += ch.Dropped
	}, c)
	c.write(executor.Stdout, []byte("wx"))
	<-entered // the observer holds "wx" and does not come back yet
	c.write(executor.Stdout, []byte("0123"))
	c.write(executor.Stderr, []byte("456789AB"))
	close(release)
	l.close()
	<-l.finished
	if data.String() != "wx456789AB" || dropped != 4 {
		t.Errorf("delivered %q, dropped %d; want wx456789AB and 4", data.String(), dropped)
	}
}

// The pipe readers copy nothing for the live observer: its bytes are read
// from the ring. Writes with an observer attached (here one that does not
// keep up) allocate nothing: no pending copy grows.
func TestLiveReadersDoNotCopy(t *testing.T) {
	c := newCapture(captureOpts{size: 1 << 20, streams: true, log: zap.NewNop()})
	c.write(executor.Stdout, make([]byte, 1<<20)) // the ring at its full size
	entered, release := make(chan struct{}), make(chan struct{})
	first := true
	l := newLive(func(executor.Chunk) {
		if first {
			first = false
			close(entered)
			<-release
		}
	}, c)
	p := make([]byte, 64<<10)
	c.write(executor.Stdout, p)
	<-entered
	if n := allocated(func() {
		for range 64 {
			c.write(executor.Stdout, p)
		}
	}); n > 16<<10 {
		t.Errorf("%d bytes allocated by 64 writes of 64 KiB", n)
	}
	close(release)
	l.close()
	<-l.finished
}

// Output switching streams on every write is bounded while it waits: past
// liveSegs runs the oldest are dropped, and counted.
func TestLiveBoundsStreamRuns(t *testing.T) {
	c := newCapture(captureOpts{size: 1 << 20, streams: true, log: zap.NewNop()})
	entered, release := make(chan struct{}), make(chan struct{})
	first := true
	var seen int64
	l := newLive(func(ch executor.Chunk) {
		if first {
			first = false
			close(entered)
			<-release
		}
		seen += int64(len(ch.Data)) + ch.Dropped
	}, c)
	c.write(executor.Stdout, []byte("x"))
	<-entered
	const n = 3 * 4096
	for i := range n {
		c.write(executor.Stream(1+i%2), []byte("y"))
	}
	c.mu.Lock()
	runs := len(l.segs)
	c.mu.Unlock()
	close(release)
	l.close()
	<-l.finished
	if runs > 4096 || seen != n+1 {
		t.Errorf("%d runs waiting; %d bytes seen or dropped, want %d", runs, seen, n+1)
	}
}

// A spill file that cannot be written (here: its writes go to /dev/full,
// a real ENOSPC) is removed, never advertised, and the result says why the
// full output could not be saved, without naming the incomplete file.
func TestCaptureSpillWriteFailureIsReported(t *testing.T) {
	spills, err := openSpillDir(t.TempDir(), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { spills.close() })
	c := newCapture(captureOpts{size: 4096, streams: true, spills: spills, owner: "s", base: "run-1", spillCap: 1 << 20, spillAfter: 1024, log: zap.NewNop()})
	c.write(executor.Stdout, bytes.Repeat([]byte("a"), 2000)) // past spillAfter: the spill opens
	if c.file == nil {
		t.Fatal("no spill file after the threshold")
	}
	path := c.path
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	c.file.Close()
	c.file = devFull{File: full, path: path}
	c.write(executor.Stdout, []byte("more"))
	c.finish()
	var res executor.Result
	c.result(&res)
	if res.SpillPath != "" || res.SpillError != "no space left on device" {
		t.Errorf("spill path %q, error %q; want none and the reason", res.SpillPath, res.SpillError)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the incomplete spill file is left: %v", err)
	}
	var rr executor.ReadResult
	c.since(0, &rr)
	if rr.SpillPath != "" || rr.SpillError != "no space left on device" {
		t.Errorf("read: spill path %q, error %q", rr.SpillPath, rr.SpillError)
	}
}

// devFull is a spill file that writes to /dev/full (every write fails with
// ENOSPC); Remove removes the real spill file it stands for.
type devFull struct {
	*os.File
	path string
}

func (d devFull) Remove() error { return os.Remove(d.path) }

// allocated is how many heap bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
