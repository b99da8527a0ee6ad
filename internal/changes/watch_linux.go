package changes

import (
	"encoding/binary"
	"errors"

	"golang.org/x/sys/unix"
)

// watchMask is what a watched directory reports: any name created,
// deleted, moved, written or whose attributes changed.
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW | unix.IN_EXCL_UNLINK

// watcher is an inotify instance watching every tracked directory of a
// tree: the names it reports are the only ones a look needs to examine.
// The kernel queues an event before the write that caused it returns, so
// a command that exited has had all of its events queued.
type watcher struct {
	fd     int
	byWD   map[int32]string // watch → directory, relative to the tree
	byRel  map[string]int32
	broken bool // a watch could not be added, or events were lost
	full   bool // a watch could not be added: the system has too few
	buf    []byte
}

// newWatcher returns a watcher, or nil when inotify is not available (the
// tracker then looks at every file each time).
func newWatcher() *watcher {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	return &watcher{fd: fd, byWD: map[int32]string{}, byRel: map[string]int32{}, buf: make([]byte, 64<<10)}
}

// add watches directory rel at path.
func (w *watcher) add(path, rel string) {
	if w == nil || w.broken {
		return
	}
	wd, err := unix.InotifyAddWatch(w.fd, path, watchMask)
	if err != nil {
		w.broken = true // look at everything instead
		w.full = errors.Is(err, unix.ENOSPC)
		return
	}
	if old, ok := w.byWD[int32(wd)]; ok && old != rel {
		delete(w.byRel, old)
	}
	w.byWD[int32(wd)] = rel
	w.byRel[rel] = int32(wd)
}

// remove stops watching directory rel.
func (w *watcher) remove(rel string) {
	if w == nil {
		return
	}
	if wd, ok := w.byRel[rel]; ok {
		_, _ = unix.InotifyRmWatch(w.fd, uint32(wd))
		delete(w.byRel, rel)
		delete(w.byWD, wd)
	}
}

// drain reads every queued event into dirty (directory → names), without
// blocking. It reports false when events were lost (the queue overflowed)
// or the watcher is broken: the caller must look at everything.
func (w *watcher) drain(dirty map[string]map[string]bool) bool {
	for !w.broken {
		n, err := unix.Read(w.fd, w.buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			break // EAGAIN: nothing more queued
		}
		w.parse(w.buf[:n], dirty)
	}
	return !w.broken
}

// parse records the events in b.
func (w *watcher) parse(b []byte, dirty map[string]map[string]bool) {
	for len(b) >= unix.SizeofInotifyEvent {
		wd := int32(binary.NativeEndian.Uint32(b[0:]))
		mask := binary.NativeEndian.Uint32(b[4:])
		nameLen := int(binary.NativeEndian.Uint32(b[12:]))
		end := unix.SizeofInotifyEvent + nameLen
		if end > len(b) {
			return
		}
		name := cString(b[unix.SizeofInotifyEvent:end])
		b = b[end:]
		switch {
		case mask&unix.IN_Q_OVERFLOW != 0:
			w.broken = true
			return
		case mask&unix.IN_IGNORED != 0:
			if rel, ok := w.byWD[wd]; ok {
				delete(w.byWD, wd)
				delete(w.byRel, rel)
			}
			continue
		}
		rel, ok := w.byWD[wd]
		if !ok {
			continue
		}
		if name == "" { // the directory itself: its parent decides
			if rel == "" {
				if mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 {
					w.broken = true
				}
				continue
			}
			rel, name = parentOf(rel)
		}
		names := dirty[rel]
		if names == nil {
			names = map[string]bool{}
			dirty[rel] = names
		}
		names[name] = true
	}
}

func (w *watcher) close() {
	if w != nil {
		unix.Close(w.fd)
	}
}

func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
