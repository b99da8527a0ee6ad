package replay

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
)

// reserve is disk space held back for compact records: a file of
// reserveSize bytes, sessions/.reserve, that a journal removes when even a
// compact record does not fit, so that record (and the next few) can be
// written on a disk that filled up. It is made again, in the background
// (after a journal's fsync), once the disk has room to spare. One file
// serves the store's journals; daemons sharing a state directory share it.
//
// Known limits: a file system that compresses or deduplicates may store
// the file's zeros in less than its size, and another program on the same
// disk may take the freed space first; then the compact record waits in
// memory like any other.
type reserve struct {
	root *os.Root
	dir  string // for statfs
	size int64

	mu      sync.Mutex
	present bool
}

const (
	reserveName = ".reserve"
	// reserveSize is the space held back: several compact records.
	reserveSize = 64 << 10
	// reserveRoom is how many times its size the disk must have free
	// before the reserve is made (again): it never takes the last room.
	reserveRoom = 16
)

// zeros is the reserve file's content (static: making it allocates nothing).
var zeros [reserveSize]byte

// ensure makes the reserve file when it is missing and the disk has room to
// spare. Failures leave no partial file behind; the next call tries again.
func (r *reserve) ensure() {
	if r == nil || r.size <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.present {
		return
	}
	if fi, err := r.root.Lstat(reserveName); err == nil && fi.Mode().IsRegular() && fi.Size() >= r.size {
		r.present = true // made by an earlier run, or another daemon
		return
	}
	if free, err := freeBytes(r.dir); err != nil || free < uint64(r.size)*reserveRoom {
		return
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	tmp := reserveName + "." + hex.EncodeToString(b)
	f, err := r.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscallNoFollow, 0o600)
	if err != nil {
		return
	}
	_, werr := f.Write(zeros[:min(r.size, reserveSize)])
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = r.root.Rename(tmp, reserveName)
	}
	if werr != nil {
		_ = r.root.Remove(tmp)
		return
	}
	r.present = true
}

// release removes the reserve file, reporting whether space was freed.
func (r *reserve) release() bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.present = false
	err := r.root.Remove(reserveName)
	return err == nil
}
