package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkStateDir refuses a state directory another user could control: one
// owned by someone else, or writable by its group or others (/tmp, a shared
// directory), where the sessions and spill directories could be planted or
// swapped before the daemon creates them. A missing directory is fine: it is
// created 0700. The directory may be reached through a symlink; the
// sessions and spill directories inside it may not (their stores check).
func checkStateDir(dir string) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	problem := ""
	switch st, ok := fi.Sys().(*syscall.Stat_t); {
	case !fi.IsDir():
		problem = "is not a directory"
	case !ok || int(st.Uid) != os.Geteuid():
		problem = "is owned by another user"
	case fi.Mode().Perm()&0o022 != 0:
		problem = fmt.Sprintf("is writable by other users (mode %04o)", fi.Mode().Perm()|stickyBit(fi))
	}
	if problem != "" {
		return fmt.Errorf("state directory %s %s: choose a private one with --state-dir or DSH_STATE_DIR (it is created 0700)", dir, problem)
	}
	return nil
}

// stickyBit is 01000 when fi has the sticky bit (as /tmp does), for the
// mode a user recognises.
func stickyBit(fi fs.FileInfo) fs.FileMode {
	if fi.Mode()&fs.ModeSticky != 0 {
		return 0o1000
	}
	return 0
}
