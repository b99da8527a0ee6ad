package sandbox

import (
	"bytes"
	"fmt"
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
// daemon (pid and start time) and rewritten when the set changes, so that
// one a killed daemon left behind is removed by the next daemon's sweep —
// and only once its maker is gone, since a placeholder removed under a
// running sandbox would free its name there.
type placeholders struct {
	mu      sync.Mutex
	held    map[string]*placeholder
	records string // the record directory; "" records nothing
	owner   string // this daemon: "PID-STARTTIME"
	dirty   bool   // held changed since the record was written
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
}

// share takes one more use of the placeholder at path when this daemon
// holds one there (another command's): a command that found the name
// present must not take it for the user's entry, which the other
// command's end would remove from under it.
func (ps *placeholders) share(path string) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if h := ps.held[path]; h != nil {
		h.n++
		return true
	}
	return false
}

// make creates (or shares) the placeholder for the absent path; false when
// it could not be made.
func (ps *placeholders) make(path string, name protectedName) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if h := ps.held[path]; h != nil {
		h.n++
		return true
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
		return false
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return false
	}
	st := fi.Sys().(*syscall.Stat_t)
	if ps.held == nil {
		ps.held = map[string]*placeholder{}
	}
	ps.held[path] = &placeholder{n: 1, dev: uint64(st.Dev), ino: st.Ino, dir: name.dir, size: fi.Size()}
	ps.dirty = true
	return true
}

// record writes the held set to this daemon's record file (removed when
// none is held), if it changed: one line per placeholder, "DEV INO DIR
// SIZE PATH". Called once per command start and end.
func (ps *placeholders) record() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if !ps.dirty || ps.records == "" {
		return
	}
	ps.dirty = false
	file := filepath.Join(ps.records, ps.owner)
	if len(ps.held) == 0 {
		os.Remove(file)
		return
	}
	var b strings.Builder
	for path, h := range ps.held {
		fmt.Fprintf(&b, "%d %d %t %d %s\n", h.dev, h.ino, h.dir, h.size, path)
	}
	if err := os.MkdirAll(ps.records, 0o700); err != nil {
		return
	}
	tmp := file + ".tmp"
	if os.WriteFile(tmp, []byte(b.String()), 0o600) == nil {
		_ = os.Rename(tmp, file)
	}
}

// release drops one use of each path and removes those no command uses
// any more (see remove), then updates the record.
func (ps *placeholders) release(paths []string) {
	if len(paths) == 0 {
		return
	}
	defer ps.record()
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
		h.remove(path)
	}
}

// remove removes the placeholder at path, only while it is still the entry
// the daemon made, as it made it (the same inode; an empty directory, or a
// file of the size it was made with): whatever someone outside put there
// since is left alone. (Inside the sandbox the placeholder is a read-only
// mount point: the command can neither fill nor replace it.)
func (h *placeholder) remove(path string) {
	fi, err := os.Lstat(path)
	if err != nil {
		return
	}
	st := fi.Sys().(*syscall.Stat_t)
	if uint64(st.Dev) != h.dev || st.Ino != h.ino {
		return
	}
	if h.dir {
		_ = syscall.Rmdir(path) // fails unless empty
	} else if fi.Mode().IsRegular() && fi.Size() == h.size {
		_ = os.Remove(path)
	}
}

// sweep removes the placeholders recorded by daemons no longer running
// (killed during a command), as release would have, and their records.
func (ps *placeholders) sweep() {
	entries, err := os.ReadDir(ps.records)
	if err != nil {
		return
	}
	for _, e := range entries {
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
