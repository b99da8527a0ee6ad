package local

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// waitExit blocks until pid, a child of this process, has exited, without
// reaping it: waitid(WEXITED|WNOWAIT) leaves the zombie in place. It waits
// on a pidfd through the Go poller, so the exit wakes the thread that
// already waits for the command's pipes to close (one wake-up, not a
// thread blocked in waitid besides); where pidfds are not available
// (before Linux 5.10), it blocks in waitid on the pid.
func waitExit(pid int) error {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return blockingWaitExit(pid)
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return blockingWaitExit(pid)
	}
	var werr error
	if err := rc.Read(func(uintptr) bool {
		var info unix.Siginfo
		// A non-blocking pidfd: EAGAIN while the process runs.
		werr = unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOWAIT, nil)
		return werr != unix.EAGAIN && werr != unix.EINTR
	}); err != nil {
		return blockingWaitExit(pid) // the poller refused the pidfd
	}
	return werr
}

// blockingWaitExit is waitExit by a waitid on the pid itself.
func blockingWaitExit(pid int) error {
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
