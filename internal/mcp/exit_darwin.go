package mcp

import (
	"errors"

	"golang.org/x/sys/unix"
)

// waitLeaderExit returns once the process pid (our child) exited, without
// reaping it: a kqueue EVFILT_PROC/NOTE_EXIT watch. A watch the kernel
// refuses (ESRCH: the child is already a zombie) means it exited. Known
// limit: when no kqueue can be made (no file descriptor left) it returns at
// once, and the caller's kill of the group then ends a server that may
// still run.
func waitLeaderExit(pid int) {
	kq, err := unix.Kqueue()
	if err != nil {
		return
	}
	defer unix.Close(kq)
	var ev unix.Kevent_t
	unix.SetKevent(&ev, pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	ev.Fflags = unix.NOTE_EXIT
	if _, err := unix.Kevent(kq, []unix.Kevent_t{ev}, nil, nil); err != nil {
		return // ESRCH: exited already
	}
	out := make([]unix.Kevent_t, 1)
	for {
		n, err := unix.Kevent(kq, nil, out, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n > 0 {
			return
		}
	}
}
