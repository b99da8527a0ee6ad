package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// stash is a daemon's supply of empty directories for placeholders: a
// directory of the record directory ("stash-OWNER"), hidden like the rest
// of the state directory in every sandbox and part of no project. A
// placeholder directory is renamed in from it (take, then
// renameNoReplace: a name that appeared meanwhile is the user's, and
// nothing is replaced) and, when no command uses it any more, renamed
// back (putBack) instead of removed, so a command's placeholders cost a
// few renames rather than a mkdir and an rmdir each. The stash fills
// itself: a placeholder made in place because the stash was empty joins
// it when released. Its guarantees are release's: only the placeholder
// the daemon made, unchanged and empty, leaves the project.
type stash struct {
	dir   string // "" until init
	spare []spare
	seq   int // the next entry's name
	made  bool
}

// spare is one empty directory of the stash: the placeholder it was (or
// will be), now at path.
type spare struct {
	path string
	placeholder
}

// stashPrefix names the stash directories in the record directory.
const stashPrefix = "stash-"

// stashMax bounds the spares kept (more concurrent placeholders than that
// are made and removed in place).
const stashMax = 64

// take hands out a spare, if any.
func (s *stash) take() (spare, bool) {
	if len(s.spare) == 0 {
		return spare{}, false
	}
	sp := s.spare[len(s.spare)-1]
	s.spare = s.spare[:len(s.spare)-1]
	return sp, true
}

// put returns a spare that was not used.
func (s *stash) put(sp spare) { s.spare = append(s.spare, sp) }

// putBack moves the released placeholder directory h at path into the
// stash, and reports whether it is gone from path (else the caller removes
// it in place). Only the placeholder as made moves: the same inode, and
// empty, both checked again once it is in the stash; one that turns out
// to have been filled from outside in between goes back to its name at
// once (renameNoReplace), so what the user put there stays theirs.
func (s *stash) putBack(path string, h *placeholder) bool {
	if s.dir == "" || len(s.spare) >= stashMax || !h.is(path) || !emptyDir(path) {
		return false
	}
	if !s.made {
		if err := os.MkdirAll(s.dir, 0o700); err != nil {
			return false
		}
		s.made = true
	}
	dst := filepath.Join(s.dir, strconv.Itoa(s.seq))
	s.seq++
	if renameNoReplace(path, dst) != nil {
		return false // another filesystem, or no renameat2 there: rmdir
	}
	if putBackMoved != nil {
		putBackMoved(dst)
	}
	if !h.is(dst) || !emptyDir(dst) {
		// Filled (or swapped) between the check and the rename: back to
		// its name, or beside it when the name was taken again meanwhile,
		// so that what the user put there stays in the project.
		restore(dst, path)
		return true
	}
	s.spare = append(s.spare, spare{path: dst, placeholder: placeholder{dev: h.dev, ino: h.ino, dir: true, size: h.size}})
	return true
}

// putBackMoved, when set (tests), runs right after putBack's rename: the
// window in which the host may fill the directory or take its name again.
var putBackMoved func(dst string)

// restore moves dst, a directory filled from the host while it was being
// put back, back to path; when path was taken again meanwhile, to the
// first free "path.dsh-acp-restored-N" beside it. Only if every such name
// is taken does it stay in the stash, which the sweep never empties of
// anything but empty directories.
func restore(dst, path string) {
	if renameNoReplace(dst, path) == nil {
		return
	}
	for n := 1; n <= 100; n++ {
		if err := renameNoReplace(dst, path+".dsh-acp-restored-"+strconv.Itoa(n)); err == nil || !errors.Is(err, fs.ErrExist) {
			return
		}
	}
}

// empty removes the stash (the daemon is closing).
func (s *stash) empty() {
	if s.made {
		removeStash(s.dir)
	}
	s.spare, s.made = nil, false
}

// removeStash removes a stash directory's empty entries and then the
// directory: rmdir only, so nothing that is not an empty directory goes.
func removeStash(dir string) {
	names, err := readNames(dir)
	if err != nil {
		return
	}
	for _, n := range names {
		_ = syscall.Rmdir(filepath.Join(dir, n))
	}
	_ = syscall.Rmdir(dir)
}

func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// emptyDir reports whether the directory at path (not a symlink) has no
// entry but "." and "..": three system calls, no poller registration.
func emptyDir(path string) bool {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	var buf [512]byte
	for {
		n, err := syscall.ReadDirent(fd, buf[:])
		if err != nil {
			return false
		}
		if n == 0 {
			return true
		}
		_, _, names := syscall.ParseDirent(buf[:n], -1, nil)
		for _, name := range names {
			if name != "." && name != ".." {
				return false
			}
		}
	}
}
