package engine

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// waitNoReap blocks until pid has exited and leaves it unreaped.
func waitNoReap(pid int) {
	var info unix.Siginfo
	for unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
	}
}

// signalGroup signals pgid's group; a gone group is fine.
func signalGroup(pgid int, sig syscall.Signal) error {
	if err := unix.Kill(-pgid, sig); err != nil && err != unix.ESRCH {
		return err
	}
	return nil
}
