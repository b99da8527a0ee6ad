package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// newPlaceholders returns a daemon's placeholder register on a fresh state
// directory, and a workspace on the same filesystem.
func newPlaceholders(t *testing.T) (*placeholders, string) {
	t.Helper()
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	mkdir(t, ws)
	ps := &placeholders{}
	ps.init(filepath.Join(base, "state"))
	t.Cleanup(ps.close)
	return ps, ws
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// TestPlaceholderStash: a released placeholder directory goes to the
// stash and the next command's comes from it (the same inode, recorded
// before it appears); the project is as it was after each release, and
// the record names exactly what is held.
func TestPlaceholderStash(t *testing.T) {
	ps, ws := newPlaceholders(t)
	zed := filepath.Join(ws, ".zed")
	if _, h := ps.hold(ws, zed, protectedName{name: ".zed", dir: true}); h != holdPlaceholder {
		t.Fatalf("hold = %v, want a placeholder", h)
	}
	ps.record()
	first := inode(t, zed)
	if rec := readRecord(t, ps); !strings.Contains(rec, " "+zed+"\n") {
		t.Fatalf("the record does not name the placeholder: %q", rec)
	}
	ps.release([]string{zed})
	if _, err := os.Lstat(zed); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the placeholder is still in the project: %v", err)
	}
	if rec := readRecord(t, ps); rec != "" {
		t.Fatalf("the record still holds %q", rec)
	}
	if _, h := ps.hold(ws, zed, protectedName{name: ".zed", dir: true}); h != holdPlaceholder {
		t.Fatalf("second hold = %v", h)
	}
	if got := inode(t, zed); got != first {
		t.Errorf("the second placeholder is inode %d, not the stashed %d: made anew", got, first)
	}
	if names, _ := readNames(ps.stash.dir); len(names) != 0 {
		t.Errorf("the stash still holds %v: the placeholder was made anew", names)
	}
	if rec := readRecord(t, ps); !strings.Contains(rec, " "+zed+"\n") {
		t.Fatalf("the stashed placeholder was not recorded before it appeared: %q", rec)
	}
	ps.release([]string{zed})
	if entries, _ := os.ReadDir(ws); len(entries) != 0 {
		t.Errorf("the project holds %v after the release", entries)
	}
}

// TestPlaceholderFilledFromOutside: what someone outside the sandbox put
// in a placeholder during the command stays where it is, in place.
func TestPlaceholderFilledFromOutside(t *testing.T) {
	ps, ws := newPlaceholders(t)
	zed := filepath.Join(ws, ".zed")
	for round := range 2 { // the second placeholder comes from the stash
		ps.hold(ws, zed, protectedName{name: ".zed", dir: true})
		if round == 0 {
			ps.release([]string{zed})
			continue
		}
		writeFile(t, filepath.Join(zed, "settings.json"), "mine\n")
		ps.release([]string{zed})
	}
	if got, err := os.ReadFile(filepath.Join(zed, "settings.json")); err != nil || string(got) != "mine\n" {
		t.Fatalf("the user's file is gone from the project: %q %v", got, err)
	}
}

// TestPlaceholderNameTakenMeanwhile: a name made outside between the
// check and the placeholder's rename is the user's: it is protected as an
// existing entry (before, such a name was left unprotected), and the spare
// stays in the stash.
func TestPlaceholderNameTakenMeanwhile(t *testing.T) {
	ps, ws := newPlaceholders(t)
	zed := filepath.Join(ws, ".zed")
	ps.hold(ws, zed, protectedName{name: ".zed", dir: true})
	ps.release([]string{zed}) // one spare in the stash
	mkdir(t, zed)             // the user's, made after hold's check
	ps.mu.Lock()
	err := ps.make(zed, protectedName{name: ".zed", dir: true})
	spares, held := len(ps.stash.spare), ps.held[zed]
	ps.mu.Unlock()
	if !errors.Is(err, fs.ErrExist) || held != nil || spares != 1 {
		t.Fatalf("make over the user's entry: err %v, held %v, spares %d; want EEXIST, nothing held, the spare kept", err, held, spares)
	}
	if _, h := ps.hold(ws, zed, protectedName{name: ".zed", dir: true}); h != holdExisting {
		t.Errorf("hold of the user's entry = %v, want existing", h)
	}
}

// TestSweepTornRecord: a dead daemon's record torn mid-line, with a stale
// tail naming a path that is now the user's, removes only the placeholder
// it names exactly; the dead daemon's stash goes, except an entry someone
// filled.
func TestSweepTornRecord(t *testing.T) {
	ps, ws := newPlaceholders(t)
	left, mine := filepath.Join(ws, ".zed"), filepath.Join(ws, ".vscode")
	mkdir(t, left)
	mkdir(t, mine)
	var st syscall.Stat_t
	_ = syscall.Lstat(left, &st)
	dead := "1-0" // pid 1 never started at time 0
	rec := fmt.Sprint(st.Dev) + " " + fmt.Sprint(st.Ino) + " true 4096 " + left + "\n" +
		"77 " + fmt.Sprint(inode(t, mine)+1) + " true 4096 " + mine + "\n" + // a stale line: another inode
		"12 3" // torn
	mkdir(t, ps.records)
	writeFile(t, filepath.Join(ps.records, dead), rec)
	stash := filepath.Join(ps.records, stashPrefix+dead)
	mkdir(t, filepath.Join(stash, "0"))
	writeFile(t, filepath.Join(mkdir(t, filepath.Join(stash, "1")), "kept"), "x")
	ps.sweep()
	var got []string
	entries, _ := os.ReadDir(ws)
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, []string{".vscode"}) {
		t.Errorf("after the sweep the project holds %v, want [.vscode]", got)
	}
	if _, err := os.Stat(filepath.Join(stash, "0")); err == nil {
		t.Errorf("the dead daemon's empty spare was not removed")
	}
	if _, err := os.Stat(filepath.Join(stash, "1", "kept")); err != nil {
		t.Errorf("a filled stash entry was removed: %v", err)
	}
}

func readRecord(t *testing.T, ps *placeholders) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ps.records, ps.owner))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

// TestPlaceholderOtherFilesystem: a workspace on another filesystem than
// the state directory (no rename between them) gets its placeholders made
// and removed in place, and the stash is left as it was.
func TestPlaceholderOtherFilesystem(t *testing.T) {
	ps, near := newPlaceholders(t)
	far, err := os.MkdirTemp("/dev/shm", "dsh-placeholder-test-")
	if err != nil {
		t.Skipf("no /dev/shm to put a workspace on another filesystem: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(far) })
	var a, b syscall.Stat_t
	if syscall.Stat(near, &a) != nil || syscall.Stat(far, &b) != nil || a.Dev == b.Dev {
		t.Skip("/dev/shm is on the state directory's filesystem here")
	}
	zed := protectedName{name: ".zed", dir: true}
	ps.hold(near, filepath.Join(near, ".zed"), zed)
	ps.release([]string{filepath.Join(near, ".zed")}) // one spare, on near's filesystem
	for range 2 {
		if _, h := ps.hold(far, filepath.Join(far, ".zed"), zed); h != holdPlaceholder {
			t.Fatalf("hold on another filesystem = %v, want a placeholder made in place", h)
		}
		ps.release([]string{filepath.Join(far, ".zed")})
		if entries, _ := os.ReadDir(far); len(entries) != 0 {
			t.Fatalf("the workspace holds %v after the release", entries)
		}
	}
	if names, _ := readNames(ps.stash.dir); len(names) != 1 {
		t.Errorf("the stash holds %v, want the one spare it had", names)
	}
}

// TestPlaceholderSpareReplaced: a spare replaced in the stash since it was
// put there (here by a symlink to a directory outside) is not renamed into
// the project: the placeholder is made in place, and leaves as usual.
func TestPlaceholderSpareReplaced(t *testing.T) {
	ps, ws := newPlaceholders(t)
	zed, name := filepath.Join(ws, ".zed"), protectedName{name: ".zed", dir: true}
	ps.hold(ws, zed, name)
	ps.release([]string{zed})
	spare := ps.stash.spare[0].path
	outside := t.TempDir()
	if err := os.Remove(spare); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, spare); err != nil {
		t.Fatal(err)
	}
	ps.hold(ws, zed, name)
	if fi, err := os.Lstat(zed); err != nil || !fi.IsDir() {
		t.Fatalf("the placeholder is %v (%v), want a directory made in place", fi, err)
	}
	ps.release([]string{zed})
	if entries, _ := os.ReadDir(ws); len(entries) != 0 {
		t.Errorf("the project holds %v after the release", entries)
	}
	if fi, err := os.Lstat(spare); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the replaced spare was touched: %v %v", fi, err)
	}
}

// TestPlaceholderFilledAndRetakenWhileReleased: a placeholder filled from
// the host in the instant it is being put back, its name taken again in
// the same instant, leaves the user's file in the project beside the name
// (path.dsh-acp-restored-1), not in the daemon's stash.
func TestPlaceholderFilledAndRetakenWhileReleased(t *testing.T) {
	ps, ws := newPlaceholders(t)
	zed := filepath.Join(ws, ".zed")
	ps.hold(ws, zed, protectedName{name: ".zed", dir: true})
	putBackMoved = func(dst string) {
		writeFile(t, filepath.Join(dst, "settings.json"), "mine\n")
		mkdir(t, zed)
	}
	defer func() { putBackMoved = nil }()
	ps.release([]string{zed})
	got, err := os.ReadFile(filepath.Join(ws, ".zed.dsh-acp-restored-1", "settings.json"))
	if err != nil || string(got) != "mine\n" {
		t.Fatalf("the user's file is not in the project: %q %v", got, err)
	}
}

// TestPlaceholderInsideAHeldOne: a second command protecting .husky/_
// while the first holds the placeholder .husky shares .husky instead of
// making .husky/_ inside it (which would keep the first command's rmdir
// from removing it): after both end, nothing is left.
func TestPlaceholderInsideAHeldOne(t *testing.T) {
	ps, ws := newPlaceholders(t)
	hooks := filepath.Join(ws, ".husky", "_")
	first, _ := ps.hold(ws, hooks, protectedName{name: "_", dir: true})
	second, h := ps.hold(ws, hooks, protectedName{name: "_", dir: true})
	if want := filepath.Join(ws, ".husky"); first != want || second != want || h != holdPlaceholder {
		t.Fatalf("holds = %q, %q (%v); want both the placeholder %q", first, second, h, want)
	}
	ps.release([]string{first})
	ps.release([]string{second})
	if entries, _ := os.ReadDir(ws); len(entries) != 0 {
		t.Errorf("left in the project: %v", entries)
	}
}
