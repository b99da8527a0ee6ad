package mcp

import (
	"errors"

	"golang.org/x/sys/unix"
)

// waitLeaderExit returns once the process pid (our child) exited, without
// reaping it: waitid(WNOWAIT), so the zombie keeps the group id until the
// group was killed.
func waitLeaderExit(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}
