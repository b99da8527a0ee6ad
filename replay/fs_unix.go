//go:build unix

package replay

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/internal/privdir"
)

// lockFile takes flock(LOCK_EX|LOCK_NB) on f: ErrLocked when another open
// file description (this process or another) holds it. The lock lives as
// long as f is open; the descriptor is close-on-exec, so commands the daemon
// spawns never inherit it.
func lockFile(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("lock journal: %w", err)
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		for {
			lerr = unix.Flock(int(fd), unix.LOCK_EX|unix.LOCK_NB)
			if !errors.Is(lerr, unix.EINTR) {
				return
			}
		}
	}); err != nil {
		return fmt.Errorf("lock journal: %w", err)
	}
	if errors.Is(lerr, unix.EWOULDBLOCK) {
		return ErrLocked
	}
	if lerr != nil {
		return fmt.Errorf("lock journal: %w", lerr)
	}
	return nil
}

// checkOwner fails with ErrUnsafe unless fi belongs to this process's
// effective user.
func checkOwner(fi fs.FileInfo) error { return asUnsafe(privdir.CheckOwner(fi)) }

// syscallNoFollow refuses to open a symlink.
const syscallNoFollow = unix.O_NOFOLLOW

// freeBytes is the space on dir's file system that this user may take.
func freeBytes(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}
