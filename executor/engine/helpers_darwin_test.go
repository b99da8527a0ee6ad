package engine

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// waitNoReap blocks until pid has exited and leaves it unreaped: a kqueue
// NOTE_EXIT, or ESRCH when pid exited before the watch (the test spawner's
// children are reaped only by Release). It panics on any other error. The
// real thing, with its checks, is executor/local's waitExit.
func waitNoReap(pid int) {
	kq, err := unix.Kqueue()
	if err != nil {
		panic(err)
	}
	defer unix.Close(kq)
	var ch [1]unix.Kevent_t
	unix.SetKevent(&ch[0], pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	ch[0].Fflags = unix.NOTE_EXIT
	for {
		_, err = unix.Kevent(kq, ch[:], nil, nil)
		if err != unix.EINTR {
			break
		}
	}
	switch err {
	case unix.ESRCH:
		return
	case nil:
	default:
		panic(err)
	}
	var ev [1]unix.Kevent_t
	for {
		n, err := unix.Kevent(kq, nil, ev[:], nil)
		switch {
		case err == unix.EINTR:
		case err != nil:
			panic(err)
		case n == 1:
			return
		}
	}
}

// signalGroup signals pgid's group; a gone group is fine, and so is the
// EPERM XNU answers for a group of zombies (the engine signals after the
// leader's exit, before Release).
func signalGroup(pgid int, sig syscall.Signal) error {
	if err := unix.Kill(-pgid, sig); err != nil && err != unix.ESRCH && err != unix.EPERM {
		return err
	}
	return nil
}
