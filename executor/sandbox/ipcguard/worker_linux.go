package ipcguard

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The supervisor's opens, creates, renames and truncates on a caller's
// behalf run on worker threads that took on the caller's identity: its
// filesystem uid and gid and its groups, no capabilities at all, and a
// umask of their own (set to the caller's before each create). A worker is
// a locked OS thread that is never unlocked, so the Go runtime ends it with
// its goroutine and never runs anything else on it. What a worker may open
// is what the caller may: the same permission checks, through the caller's
// own mounts (its root is the path's start), so a read-only mount stays
// read-only and a root daemon cannot write what its capability-less
// sandbox could not.

// workerIdle is how long a worker waits for its next job before it ends.
const workerIdle = 10 * time.Second

// workerHops counts the jobs onWorker handed to another thread (tests).
var workerHops atomic.Int64

// workers are the idle worker threads, by identity.
type workers struct {
	mu   sync.Mutex
	idle map[string][]*worker
}

type worker struct {
	jobs chan func()
	key  string // the identity it took (caller.identity)
}

// onWorker runs f on a worker thread with c's identity, starting one where
// none is idle (or at once, where c's call is answered on such a worker
// already: dispatch). It fails where no thread can take that identity (a daemon
// that is not root serving a caller of another user).
func (g *Guard) onWorker(c *caller, f func()) error {
	key := c.identity()
	if c.on != nil && c.on.key == key {
		f() // already on one (dispatch)
		return nil
	}
	workerHops.Add(1)
	w := g.workers.take(key)
	if w == nil {
		var err error
		if w, err = g.startWorker(c, key); err != nil {
			return err
		}
	}
	done := make(chan struct{})
	w.jobs <- func() { f(); close(done) }
	<-done
	g.workers.put(key, w)
	return nil
}

func (ws *workers) take(key string) *worker {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	l := ws.idle[key]
	if len(l) == 0 {
		return nil
	}
	w := l[len(l)-1]
	ws.idle[key] = l[:len(l)-1]
	return w
}

func (ws *workers) put(key string, w *worker) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.idle == nil {
		ws.idle = map[string][]*worker{}
	}
	ws.idle[key] = append(ws.idle[key], w)
}

// retire takes w out of the idle list; false when someone took it already
// (a job is on its way).
func (ws *workers) retire(key string, w *worker) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	l := ws.idle[key]
	i := slices.Index(l, w)
	if i < 0 {
		return false
	}
	ws.idle[key] = slices.Delete(l, i, i+1)
	return true
}

// startWorker starts a worker thread with c's identity.
func (g *Guard) startWorker(c *caller, key string) (*worker, error) {
	w := &worker{jobs: make(chan func()), key: key}
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if err := becomeCaller(c); err != nil {
			ready <- err
			return
		}
		ready <- nil
		t := time.NewTimer(workerIdle)
		for {
			select {
			case f := <-w.jobs:
				f()
				t.Reset(workerIdle)
			case <-t.C:
				if g.workers.retire(key, w) {
					return
				}
				t.Reset(workerIdle)
			}
		}
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	return w, nil
}

// fsIDs are the calling thread's filesystem uid and gid:
// setfs[ug]id(-1) changes nothing and returns the id in force.
func fsIDs() (uid, gid uint32) {
	u, _, _ := unix.RawSyscall(unix.SYS_SETFSUID, ^uintptr(0), 0, 0)
	g, _, _ := unix.RawSyscall(unix.SYS_SETFSGID, ^uintptr(0), 0, 0)
	return uint32(u), uint32(g)
}

// becomeCaller gives the calling (locked) thread c's identity and drops
// every capability it has, for good. Each is a raw system call: it
// changes this thread only (Go's own Setuid and friends change them all).
func becomeCaller(c *caller) error {
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		return fmt.Errorf("ipcguard: worker: unshare: %w", err)
	}
	have, err := unix.Getgroups()
	if err != nil {
		return err
	}
	mine := make([]uint32, len(have))
	for i, g := range have {
		mine[i] = uint32(g)
	}
	slices.Sort(mine)
	if !slices.Equal(mine, c.groups) {
		var p unsafe.Pointer
		if len(c.groups) > 0 {
			p = unsafe.Pointer(&c.groups[0])
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(c.groups)), uintptr(p), 0); e != 0 {
			return fmt.Errorf("ipcguard: worker: setgroups: %w", e)
		}
	}
	unix.RawSyscall(unix.SYS_SETFSGID, uintptr(c.fsgid), 0, 0)
	unix.RawSyscall(unix.SYS_SETFSUID, uintptr(c.fsuid), 0, 0)
	if uid, gid := fsIDs(); uid != c.fsuid || gid != c.fsgid {
		return fmt.Errorf("ipcguard: worker: cannot take uid %d gid %d", c.fsuid, c.fsgid)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		return fmt.Errorf("ipcguard: worker: capset: %w", err)
	}
	return nil
}

// dispatch hands open notification n to a worker thread with the daemon's
// own identity, which answers it whole (answerOpen on it), so that the
// open itself needs no hop to another thread: every sandboxed command has
// that identity (see callerInfo). Only a daemon without capabilities
// dispatches: its worker then reads the caller's /proc, memory and
// descriptors with just the rights the daemon's goroutines have (a root
// daemon's worker has dropped CAP_SYS_PTRACE and CAP_DAC_OVERRIDE, which
// reading a non-dumpable caller needs). False where it does not: n is then
// answered on a goroutine of its own. It counts n in handlers and inflight
// until answered, as the loop's goroutines do.
func (g *Guard) dispatch(n notif) bool {
	if !g.dispatches {
		return false
	}
	w := g.workers.take(g.meKey)
	if w == nil {
		var err error
		if w, err = g.startWorker(&caller{fsuid: g.me.fsuid, fsgid: g.me.fsgid, groups: g.me.groups}, g.meKey); err != nil {
			return false
		}
	}
	g.handlers.Add(1)
	w.jobs <- func() {
		defer g.handlers.Done()
		defer g.inflight.Add(-1)
		defer g.workers.put(g.meKey, w)
		if g.hold != nil {
			g.hold()
		}
		g.answerOpen(n, w)
	}
	return true
}
