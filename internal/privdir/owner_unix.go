//go:build unix

package privdir

import (
	"io/fs"
	"os"
	"syscall"
)

func checkOwner(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return unsafe(path, "has no owner this system reports")
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return unsafe(path, "is owned by uid %d, not %d", st.Uid, uid)
	}
	return nil
}
