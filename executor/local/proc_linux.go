package local

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// waitExit blocks until pid has exited, without reaping it:
// waitid(WEXITED|WNOWAIT) leaves the zombie in place.
func waitExit(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err
		}
	}
}

// signalGroup sends sig to the process group pgid; a gone group is fine.
// Linux signals a zombie leader without complaint, so leaderExited changes
// nothing here.
func signalGroup(pgid int, sig syscall.Signal, leaderExited bool) error {
	return groupSignalError(unix.Kill(-pgid, sig), leaderExited, false)
}
