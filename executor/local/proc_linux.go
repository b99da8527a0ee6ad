package local

import (
	"fmt"
	"os"
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

// outputPipe is the pipe a command's stdout or stderr goes to. The read
// end is the daemon's: non-blocking and polled, so a Close unblocks a
// pending Read. The write end is the child's: left blocking and never
// registered with the poller (os.Pipe would register both ends, and exec
// would then set the child's end blocking again: five system calls per
// pipe for nothing).
func outputPipe() (r, w *os.File, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, fmt.Errorf("pipe: %w", err)
	}
	if err := unix.SetNonblock(p[0], true); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, nil, fmt.Errorf("pipe: %w", err)
	}
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1"), nil
}
