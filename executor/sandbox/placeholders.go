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
// workspace share one, and it is removed when the last ends. Each is also
// recorded in a file of the state directory (records), named after the
// daemon (pid and start time), so that one a killed daemon left behind is
// removed by the next daemon's sweep — and only once its maker is gone,
// since a placeholder removed under a running sandbox would free its name
// there.
type placeholders struct {
	mu      sync.Mutex
	held    map[string]*placeholder
	records string // the record directory; "" records nothing
	owner   string // this daemon: "PID-STARTTIME"
	n       int    // records made, for their names
}

type placeholder struct {
	n        int
	dev, ino uint64
	dir      bool
	size     int64
	record   string // its record file, "" when none
}

// placeholderRecords is the state directory's subdirectory of records.
const placeholderRecords = "placeholders"

// init sets the record directory (below stateDir) and this daemon's name.
func (ps *placeholders) init(stateDir string) {
	ps.records = filepath.Join(stateDir, placeholderRecords)
	ps.owner = strconv.Itoa(os.Getpid()) + "-" + procStart(os.Getpid())
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
	h := &placeholder{n: 1, dev: uint64(st.Dev), ino: st.Ino, dir: name.dir, size: fi.Size()}
	h.record = ps.writeRecord(path, h)
	ps.held[path] = h
	return true
}

// writeRecord records h at path; it returns the record's file, or "".
func (ps *placeholders) writeRecord(path string, h *placeholder) string {
	if ps.records == "" {
		return ""
	}
	if err := os.MkdirAll(ps.records, 0o700); err != nil {
		return ""
	}
	ps.n++
	file := filepath.Join(ps.records, fmt.Sprintf("%s.%d", ps.owner, ps.n))
	data := fmt.Sprintf("%d %d %t %d\n%s", h.dev, h.ino, h.dir, h.size, path)
	if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
		return ""
	}
	return file
}

// release drops one use of each path and removes those no command uses
// any more (see remove).
func (ps *placeholders) release(paths []string) {
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
		h.remove(path)
	}
}

// remove removes the placeholder at path, only while it is still the entry
// the daemon made, as it made it (the same inode; an empty directory, or a
// file of the size it was made with): whatever someone outside put there
// since is left alone. (Inside the sandbox the placeholder is a read-only
// mount point: the command can neither fill nor replace it.) Its record
// goes too.
func (h *placeholder) remove(path string) {
	defer func() {
		if h.record != "" {
			os.Remove(h.record)
		}
	}()
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
// (killed during a command), as release would have.
func (ps *placeholders) sweep() {
	entries, err := os.ReadDir(ps.records)
	if err != nil {
		return
	}
	for _, e := range entries {
		owner, _, ok := strings.Cut(e.Name(), ".")
		if !ok || owner == ps.owner || ownerAlive(owner) {
			continue
		}
		file := filepath.Join(ps.records, e.Name())
		b, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		head, path, _ := strings.Cut(string(b), "\n")
		h := &placeholder{record: file}
		if _, err := fmt.Sscanf(head, "%d %d %t %d", &h.dev, &h.ino, &h.dir, &h.size); err != nil || !filepath.IsAbs(path) {
			os.Remove(file)
			continue
		}
		h.remove(path)
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
