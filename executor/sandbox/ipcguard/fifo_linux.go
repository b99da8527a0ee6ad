package ipcguard

import (
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// A FIFO a sandboxed command made itself (mkfifo in the workspace, to
// talk to its own background task) may be written, wherever it is: the
// supervisor makes every FIFO a sandbox asks for and records its identity,
// and a FIFO it recorded is not a host process's. The identity is the
// inode's device, number and birth time (statx STATX_BTIME): an inode
// number reused later for a host's FIFO has a later birth. Where the
// filesystem keeps no birth time, the FIFO is not recorded (and cannot be
// opened for writing outside /tmp).

// fifoSlack is how far before the mknod a FIFO's recorded birth may be
// (a filesystem's timestamps come from a coarse clock, a tick behind).
const fifoSlack = 50 * time.Millisecond

// maxFIFOs bounds the record; the oldest entries go first.
const maxFIFOs = 4096

type fifoID struct {
	dev   uint64
	ino   uint64
	birth unix.StatxTimestamp
}

// madeFIFOs is the record of FIFOs sandboxes made.
type madeFIFOs struct {
	mu    sync.Mutex
	ids   map[fifoID]bool
	order []fifoID
}

func (m *madeFIFOs) add(id fifoID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ids == nil {
		m.ids = map[fifoID]bool{}
	}
	if len(m.order) >= maxFIFOs {
		delete(m.ids, m.order[0])
		m.order = m.order[1:]
	}
	m.ids[id] = true
	m.order = append(m.order, id)
}

// has reports whether fd is a FIFO a sandbox made.
func (m *madeFIFOs) has(fd int) bool {
	id, ok := identify(fd)
	if !ok {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ids[id]
}

// identify is fd's identity; false where its birth time is unknown.
func identify(fd int) (fifoID, bool) {
	var stx unix.Statx_t
	if unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_INO|unix.STATX_BTIME, &stx) != nil || stx.Mask&unix.STATX_BTIME == 0 {
		return fifoID{}, false
	}
	return fifoID{dev: unix.Mkdev(stx.Dev_major, stx.Dev_minor), ino: stx.Ino, birth: stx.Btime}, true
}

// mkfifo makes the FIFO call asks for at t (absent), as the caller, and
// records it when what stands at the name afterwards is a FIFO born after
// the call began (not one renamed there meanwhile).
func (g *Guard) mkfifo(c *caller, call *openCall, t *target) unix.Errno {
	if t.dir < 0 {
		return unix.EACCES
	}
	if c.partial {
		return needWhole // the caller's umask
	}
	var errno unix.Errno
	werr := g.onWorker(c, func() {
		since := time.Now().Add(-fifoSlack)
		old := unix.Umask(int(c.umask))
		err := unix.Mknodat(t.dir, t.name, call.mode&^unix.S_IFMT|unix.S_IFIFO, 0)
		unix.Umask(old)
		if errno = errnoOf(err); errno != 0 {
			return
		}
		pin, err := unix.Openat(t.dir, t.name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		defer unix.Close(pin)
		var st unix.Stat_t
		id, ok := identify(pin)
		if ok && unix.Fstat(pin, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO &&
			!time.Unix(id.birth.Sec, int64(id.birth.Nsec)).Before(since) {
			g.fifos.add(id)
		}
	})
	if werr != nil {
		g.log.Warn("ipcguard: worker", zap.Error(werr))
		return unix.EACCES
	}
	return errno
}
