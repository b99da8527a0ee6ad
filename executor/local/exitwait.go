package local

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// exitEvents reports a child's exit without reaping it, in the shape of
// kqueue's EVFILT_PROC/NOTE_EXIT, darwin's way to learn of an exit while
// the child stays an unreaped zombie (proc_darwin.go). awaitExit is the
// logic around it; it lives here, untagged, so that it is tested on Linux
// with a fake and with a pidfd-backed source (exitwait_test.go,
// exitwait_linux_test.go). Linux itself uses waitid(WNOWAIT) instead.
type exitEvents interface {
	// Watch asks for pid's exit. It fails with ESRCH when pid is no longer
	// running: a kqueue refuses to attach to a process that has exited (or
	// is exiting), so an exit before Watch is never reported by Next.
	Watch(pid int) error
	// Next blocks until the next event and says whether it is pid's exit.
	// It may fail with EINTR.
	Next() (exited bool, err error)
	// Exited says whether pid is a child of this process that has exited
	// or is irrevocably exiting; it never reaps pid.
	Exited(pid int) (bool, error)
	// Close frees the source.
	Close() error
}

// errNotOurExit is returned by awaitExit when pid vanished before its exit
// was seen and is not (or no longer) this process's exited child: it may
// have been reaped elsewhere, so its pid must not be signalled.
var errNotOurExit = errors.New("the process is gone and is not our exited child")

// awaitExit blocks until pid, a child of this process, has exited, and
// leaves it unreaped. It closes ev. An error means the exit could not be
// observed; the caller must then treat pid as possibly recycled (never
// signal it again). EINTR is retried.
//
// The one race: pid may exit before Watch. Watch then fails with ESRCH, and
// ev.Exited (a read that does not reap) confirms that pid is our exited
// child, so the exit is taken as seen. Since nothing reaps our children but
// Release, pid cannot have been recycled in between.
func awaitExit(ev exitEvents, pid int) error {
	defer ev.Close()
	for {
		err := ev.Watch(pid)
		if err == nil {
			break
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("watch pid %d: %w", pid, err)
		}
		exited, err := ev.Exited(pid)
		if err != nil {
			return fmt.Errorf("pid %d vanished before its exit was watched: %w", pid, err)
		}
		if !exited {
			return fmt.Errorf("pid %d: %w", pid, errNotOurExit)
		}
		return nil
	}
	for {
		exited, err := ev.Next()
		switch {
		case errors.Is(err, unix.EINTR):
		case err != nil:
			return fmt.Errorf("wait for pid %d: %w", pid, err)
		case exited:
			return nil
		}
	}
}

// groupSignalError turns kill(-pgid, sig)'s error into Signal's: a group
// that is gone (ESRCH) is no error. zombiesEPERM says the kernel answers
// EPERM for a group whose members are all zombies (XNU's killpg skips
// zombies and reports EPERM when it found no member to signal; Linux
// signals zombies and succeeds): there, once the leader has exited, EPERM
// means no member the daemon may signal was left — the state of every
// finished command between its exit and Release — and is no error either.
// Any other EPERM is returned.
func groupSignalError(err error, leaderExited, zombiesEPERM bool) error {
	switch {
	case err == nil, errors.Is(err, unix.ESRCH):
		return nil
	case errors.Is(err, unix.EPERM) && leaderExited && zombiesEPERM:
		return nil
	}
	return err
}
