//go:build unix

package rpc

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// watchHangup calls onHangup once f reports POLLHUP or POLLERR — for a pipe,
// its last reader closed it — while nothing is being written. It polls a
// duplicate of f's descriptor on a goroutine of its own (blocked in poll,
// costing one thread) until stop is called. A descriptor that never hangs
// up (a regular file, /dev/null) is simply never reported.
func watchHangup(f *os.File, onHangup func()) (stop func(), err error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("watch hang-up: %w", err)
	}
	fd := -1
	var dupErr error
	if err := rc.Control(func(raw uintptr) { fd, dupErr = unix.FcntlInt(raw, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, fmt.Errorf("watch hang-up: %w", err)
	}
	if dupErr != nil {
		return nil, fmt.Errorf("watch hang-up: dup: %w", dupErr)
	}
	var wake [2]int
	if err := cloexecPipe(&wake); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("watch hang-up: pipe: %w", err)
	}
	go pollHangup(fd, wake[0], onHangup)
	return sync.OnceFunc(func() { _ = unix.Close(wake[1]) }), nil
}

// pollHangup waits for fd to hang up or wake to be closed, then closes both.
func pollHangup(fd, wake int, onHangup func()) {
	defer func() { _ = unix.Close(fd); _ = unix.Close(wake) }()
	fds := []unix.PollFd{{Fd: int32(fd)}, {Fd: int32(wake), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		switch {
		case err != nil, fds[1].Revents != 0, fds[0].Revents&unix.POLLNVAL != 0:
			return
		case fds[0].Revents&(unix.POLLHUP|unix.POLLERR) != 0:
			onHangup()
			return
		}
	}
}
