package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// placeholders are the entries the daemon made for absent protected
// names, counted per command using them: two commands in the same
// workspace share one, and it is removed when the last ends. Those held
// are also recorded in one file of the state directory, named after the
// daemon (pid and start time) and rewritten in place when the set
// changes, so that one a killed daemon left behind is removed by the next
// daemon's sweep — and only once its maker is gone, since a placeholder
// removed under a running sandbox would free its name there.
//
// A placeholder directory is not made and removed on the spot (on ext4 a
// directory's mkdir and rmdir allocate and free a block: 50 and 100–170 µs
// here, ten of each per command in a project without editor files) but
// renamed in from, and back to, a stash of empty directories in the
// record directory (stash.go): a rename is a few µs, keeps the inode, and
// the stash lies in the state directory, which no sandbox shows and no
// project holds.
type placeholders struct {
	mu      sync.Mutex
	held    map[string]*placeholder
	records string   // the record directory; "" records nothing
	owner   string   // this daemon: "PID-STARTTIME"
	dirty   bool     // held changed since the record was written
	rec     *os.File // this daemon's record, opened on first use
	recLen  int64    // its length
	stash   stash
}

type placeholder struct {
	n        int
	dev, ino uint64
	dir      bool
	size     int64
}

// placeholderRecords is the state directory's subdirectory of records.
const placeholderRecords = "placeholders"

// init sets the record directory (below stateDir) and this daemon's name.
func (ps *placeholders) init(stateDir string) {
	ps.records = filepath.Join(stateDir, placeholderRecords)
	ps.owner = strconv.Itoa(os.Getpid()) + "-" + procStart(os.Getpid())
	ps.stash.dir = filepath.Join(ps.records, stashPrefix+ps.owner)
}

// holding is what hold found at a protected name.
type holding int

const (
	holdNone        holding = iota // nothing to protect (an absent "-" name, or no placeholder could be made)
	holdExisting                   // an entry of the user's: bind it read-only
	holdPlaceholder                // a placeholder this command holds (made or shared)
)

// hold decides, under one lock (so another command's placeholder is never
// taken for the user's entry, which that command's end would remove from
// under this one), what stands at path inside the workspace ws: a
// placeholder this daemon holds (one more use of it), an existing entry,
// or nothing, in which case it makes the placeholder — at the topmost
// missing component (with .husky absent, .husky itself, or .husky/_ could
// be made). It returns the path held and what it is.
func (ps *placeholders) hold(ws, path string, name protectedName) (string, holding) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.share(path) {
		return path, holdPlaceholder
	}
	if _, err := os.Lstat(path); err == nil {
		return path, holdExisting
	}
	if name.content == "-" {
		return path, holdNone
	}
	for parent := filepath.Dir(path); parent != ws && within(parent, ws); parent = filepath.Dir(parent) {
		if ps.share(parent) {
			return parent, holdPlaceholder
		}
		if _, err := os.Lstat(parent); err == nil {
			break
		}
		path, name = parent, protectedName{name: filepath.Base(parent), dir: true}
	}
	switch err := ps.make(path, name); {
	case err == nil:
		return path, holdPlaceholder
	case errors.Is(err, fs.ErrExist):
		return path, holdExisting // made meanwhile outside: the user's now
	default:
		return path, holdNone
	}
}

// share takes one more use of the placeholder at path when this daemon
// holds one there (another command's); ps.mu is held.
func (ps *placeholders) share(path string) bool {
	if h := ps.held[path]; h != nil {
		h.n++
		return true
	}
	return false
}

// make creates the placeholder for the absent path; ps.mu is held. A
// directory comes from the stash when it has one on path's filesystem,
// recorded before it is renamed in (its inode is known already, so a
// daemon killed at any moment leaves nothing the sweep does not find);
// else it is made in place and recorded with the rest (record).
func (ps *placeholders) make(path string, name protectedName) error {
	if ps.held == nil {
		ps.held = map[string]*placeholder{}
	}
	if name.dir {
		if sp, ok := ps.stash.take(); ok {
			h := &sp.placeholder
			h.n = 1
			if !h.is(sp.path) {
				return ps.make(path, name) // not the spare it was: dropped
			}
			ps.held[path] = h
			ps.dirty = true
			ps.writeRecord()
			err := renameNoReplace(sp.path, path)
			if err == nil {
				return nil
			}
			delete(ps.held, path)
			ps.stash.put(sp) // still there: not renamed
			if errors.Is(err, fs.ErrExist) {
				return err
			}
			// Another filesystem (EXDEV), or no renameat2 there: made in place.
		}
	}
	var err error
	if name.dir {
		err = os.Mkdir(path, 0o755)
	} else {
		var f *os.File
		if f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
			_, err = f.WriteString(name.content)
			f.Close()
		}
	}
	if err != nil {
		return err
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	st := fi.Sys().(*syscall.Stat_t)
	ps.held[path] = &placeholder{n: 1, dev: uint64(st.Dev), ino: st.Ino, dir: name.dir, size: fi.Size()}
	ps.dirty = true
	return nil
}

// record writes the held set to this daemon's record file if it changed.
// Called once per command start and end.
func (ps *placeholders) record() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.writeRecord()
}

// writeRecord is record with ps.mu held: one line per placeholder, "DEV
// INO DIR SIZE PATH", written in place at the start of the file kept open
// (a pwrite and an ftruncate: no temporary file, no rename), an empty file
// when none is held. A record torn or left with a stale tail (a daemon
// killed between the write and the truncate; a machine that crashed
// mid-write) can only misname placeholders, and the sweep removes nothing
// that is not, at that path, the very inode recorded and as it was made
// (placeholder.remove): a torn line never removes a user's entry.
func (ps *placeholders) writeRecord() {
	if !ps.dirty || ps.records == "" {
		return
	}
	if ps.rec == nil {
		if err := os.MkdirAll(ps.records, 0o700); err != nil {
			return
		}
		f, err := os.OpenFile(filepath.Join(ps.records, ps.owner), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return
		}
		ps.rec = f
	}
	ps.dirty = false
	var b bytes.Buffer
	for path, h := range ps.held {
		fmt.Fprintf(&b, "%d %d %t %d %s\n", h.dev, h.ino, h.dir, h.size, path)
	}
	if _, err := ps.rec.WriteAt(b.Bytes(), 0); err != nil {
		ps.dirty = true
		return
	}
	if n := int64(b.Len()); n < ps.recLen {
		_ = ps.rec.Truncate(n) // shorter: drop the tail (a longer write covered it)
	}
	ps.recLen = int64(b.Len())
}

// release drops one use of each path and removes those no command uses
// any more (see remove), then updates the record.
func (ps *placeholders) release(paths []string) {
	if len(paths) == 0 {
		return
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, path := range paths {
		h := ps.held[path]
		if h == nil {
			continue
		}
		if h.n--; h.n > 0 {
			continue
		}
		delete(ps.held, path)
		ps.dirty = true
		if !h.dir || !ps.stash.putBack(path, h) {
			h.remove(path)
		}
	}
	ps.writeRecord()
}

// close removes this daemon's record and stash (every command has ended).
func (ps *placeholders) close() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.rec != nil && len(ps.held) == 0 {
		ps.rec.Close()
		ps.rec = nil
		os.Remove(filepath.Join(ps.records, ps.owner))
	}
	ps.stash.empty()
}

// remove removes the placeholder at path, only while it is still the entry
// the daemon made, as it made it (the same inode; an empty directory, or a
// file of the size it was made with): whatever someone outside put there
// since is left alone. (Inside the sandbox the placeholder is a read-only
// mount point: the command can neither fill nor replace it.)
func (h *placeholder) remove(path string) {
	if !h.is(path) {
		return
	}
	if h.dir {
		_ = syscall.Rmdir(path) // fails unless empty
	} else {
		_ = os.Remove(path)
	}
}

// is reports whether path is still the placeholder h as it was made: the
// same inode, and a directory (emptiness is rmdir's or the stash's check)
// or a regular file of the size it was made with.
func (h *placeholder) is(path string) bool {
	var st syscall.Stat_t
	if syscall.Lstat(path, &st) != nil || uint64(st.Dev) != h.dev || st.Ino != h.ino {
		return false
	}
	mode := st.Mode & syscall.S_IFMT
	return h.dir && mode == syscall.S_IFDIR || !h.dir && mode == syscall.S_IFREG && st.Size == h.size
}

// sweep removes the placeholders recorded by daemons no longer running
// (killed during a command), as release would have, their records and
// their stashes.
func (ps *placeholders) sweep() {
	entries, err := os.ReadDir(ps.records)
	if err != nil {
		return
	}
	for _, e := range entries {
		if owner, ok := strings.CutPrefix(e.Name(), stashPrefix); ok {
			if owner != ps.owner && !ownerAlive(owner) {
				removeStash(filepath.Join(ps.records, e.Name()))
			}
			continue
		}
		owner := strings.TrimSuffix(e.Name(), ".tmp")
		if owner == ps.owner || ownerAlive(owner) {
			continue
		}
		file := filepath.Join(ps.records, e.Name())
		b, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			var h placeholder
			var path string
			if n, _ := fmt.Sscanf(line, "%d %d %t %d %s", &h.dev, &h.ino, &h.dir, &h.size, &path); n != 5 {
				continue
			}
			// The path is the rest of the line (it may hold spaces).
			if f := strings.SplitN(line, " ", 5); len(f) == 5 && filepath.IsAbs(f[4]) {
				h.remove(f[4])
			}
		}
		os.Remove(file)
	}
}

// ownerAlive reports whether the daemon "PID-STARTTIME" still runs.
func ownerAlive(owner string) bool {
	pid, start, ok := strings.Cut(owner, "-")
	n, err := strconv.Atoi(pid)
	if !ok || err != nil {
		return false
	}
	return procStart(n) == start
}

// procStart is pid's start time (/proc/PID/stat field 22), "" when it does
// not run (or there is no /proc).
func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return ""
	}
	return f[19]
}
