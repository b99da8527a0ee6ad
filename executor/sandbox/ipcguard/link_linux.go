package ipcguard

import (
	"crypto/rand"
	"encoding/hex"
	"io"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// breakLink handles a write to a regular file with more than one link:
// the file is first replaced, in its directory, by a copy of its own (a
// new inode with the same bytes, mode and, where the caller may set them,
// owner and group), atomically (written under a temporary name, then
// renamed over the entry), and the write goes to the copy. The other links
// (a store outside the workspace, pnpm's) keep the old inode, unchanged.
// All of it is made as the caller, who must be allowed to write the file,
// read it (unless O_TRUNC discards it) and create in its directory; where
// the link cannot be broken, the open fails with that error rather than
// write through. A descriptor of the caller's own (/proc/self/fd/N) names
// no directory: EACCES.
func (g *Guard) breakLink(c *caller, call *openCall, t *target) (int, unix.Errno) {
	if t.own || t.dir < 0 {
		return -1, unix.EACCES
	}
	fd := -1
	var errno unix.Errno
	werr := g.onWorker(c, func() {
		var nf int
		if nf, errno = copyOver(t, call.flags&unix.O_TRUNC != 0 || call.truncate && call.length == 0); errno != 0 {
			return
		}
		defer unix.Close(nf)
		var err error
		fd, err = unix.Open(fdPath(nf), reopenFlags(call), 0)
		if err == nil && call.truncate {
			err = unix.Ftruncate(fd, call.length)
			unix.Close(fd)
			fd = -1
		}
		errno = errnoOf(err)
	})
	if werr != nil {
		g.log.Warn("ipcguard: worker", zap.Error(werr))
		return -1, unix.EACCES
	}
	if errno == 0 {
		g.log.Info("ipcguard: hard link broken before a write", zap.Int("pid", c.tid), zap.String("path", call.path))
	}
	return fd, errno
}

// copyOver replaces t's entry by a copy of its inode (empty when empty is
// set) and returns a descriptor of the copy. It runs on a worker.
func copyOver(t *target, empty bool) (int, unix.Errno) {
	w, err := unix.Open(fdPath(t.pin), unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, errnoOf(err) // the caller may not write it at all
	}
	unix.Close(w)
	src := -1
	if !empty {
		if src, err = unix.Open(fdPath(t.pin), unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
			return -1, errnoOf(err)
		}
		defer unix.Close(src)
	}
	tmp := tempName(t.name)
	nf, err := unix.Openat(t.dir, tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return -1, errnoOf(err)
	}
	if errno := fillCopy(nf, src, &t.st); errno != 0 {
		unix.Close(nf)
		unix.Unlinkat(t.dir, tmp, 0)
		return -1, errno
	}
	if err := unix.Renameat(t.dir, tmp, t.dir, t.name); err != nil {
		unix.Close(nf)
		unix.Unlinkat(t.dir, tmp, 0)
		return -1, errnoOf(err)
	}
	return nf, 0
}

// fillCopy copies src (-1: nothing) into nf and gives nf st's owner,
// group (where the caller may: a user who is not root keeps its own) and
// mode.
func fillCopy(nf, src int, st *unix.Stat_t) unix.Errno {
	if src >= 0 {
		if err := copyData(nf, src); err != nil {
			return errnoOf(err)
		}
	}
	_ = unix.Fchown(nf, int(st.Uid), int(st.Gid))
	return errnoOf(unix.Fchmod(nf, st.Mode&0o7777))
}

// copyData copies src to dst, both at their offsets 0: copy_file_range
// (which may share extents: a later write to dst copies them first), else
// read and write.
func copyData(dst, src int) error {
	for {
		n, err := unix.CopyFileRange(src, nil, dst, nil, 1<<30, 0)
		if err != nil {
			break
		}
		if n == 0 {
			return nil
		}
	}
	if _, err := unix.Seek(src, 0, io.SeekStart); err != nil {
		return err
	}
	if err := unix.Ftruncate(dst, 0); err != nil {
		return err
	}
	if _, err := unix.Seek(dst, 0, io.SeekStart); err != nil {
		return err
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(src, buf)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		for b := buf[:n]; len(b) > 0; {
			m, err := unix.Write(dst, b)
			if err != nil {
				return err
			}
			b = b[m:]
		}
	}
}

// tempName is a name beside name for its copy in the making.
func tempName(name string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "." + name + ".dsh-link-" + hex.EncodeToString(b)
}
