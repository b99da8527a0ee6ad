package local

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// From XNU's sys/proc.h (not in x/sys/unix): the zombie state of
// extern_proc.p_stat, and the p_flag bit of a process working on exiting.
const (
	sZomb  = 5
	pWExit = 0x00002000
)

// waitExit blocks until pid, a child of the daemon, has exited, without
// reaping it: a kqueue of its own watches EVFILT_PROC/NOTE_EXIT, which
// fires when the process exits and leaves the zombie for wait4 (Release).
// awaitExit (exitwait.go) handles EINTR and an exit before the watch.
func waitExit(pid int) error {
	kq, err := unix.Kqueue()
	if err != nil {
		return fmt.Errorf("kqueue: %w", err)
	}
	return awaitExit(kqueueExits{kq: kq, pid: pid}, pid)
}

// kqueueExits is exitEvents on one kqueue, for one pid. A kqueue is not
// inherited across fork, so commands started meanwhile never hold it.
type kqueueExits struct {
	kq, pid int
}

// Watch registers NOTE_EXIT for pid. The change list is applied with no
// event list, so a failed registration is kevent's own error: ESRCH when
// the process has exited or is exiting.
func (k kqueueExits) Watch(pid int) error {
	var ch [1]unix.Kevent_t
	unix.SetKevent(&ch[0], pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	ch[0].Fflags = unix.NOTE_EXIT
	_, err := unix.Kevent(k.kq, ch[:], nil, nil)
	return err
}

// Next blocks (no timeout) for the one event this kqueue can deliver.
func (k kqueueExits) Next() (bool, error) {
	var ev [1]unix.Kevent_t
	n, err := unix.Kevent(k.kq, nil, ev[:], nil)
	if err != nil || n == 0 {
		return false, err
	}
	if ev[0].Flags&unix.EV_ERROR != 0 {
		return false, syscall.Errno(ev[0].Data)
	}
	return ev[0].Filter == unix.EVFILT_PROC && ev[0].Ident == uint64(k.pid) && ev[0].Fflags&unix.NOTE_EXIT != 0, nil
}

// Exited reads pid's kinfo_proc (sysctl kern.proc.pid lists zombies too,
// and reaps nothing): our child, and a zombie or past the start of exit.
func (k kqueueExits) Exited(pid int) (bool, error) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return false, fmt.Errorf("sysctl kern.proc.pid: %w", err)
	}
	p := kp.Proc
	ours := p.P_pid == int32(pid) && kp.Eproc.Ppid == int32(os.Getpid())
	return ours && (p.P_stat == sZomb || p.P_flag&pWExit != 0), nil
}

// Close closes the kqueue (and with it the registration).
func (k kqueueExits) Close() error { return unix.Close(k.kq) }

// signalGroup sends sig to the process group pgid; a gone group is fine,
// and so is the EPERM that XNU answers for a group whose members are all
// zombies once the leader has exited (see groupSignalError).
func signalGroup(pgid int, sig syscall.Signal, leaderExited bool) error {
	return groupSignalError(unix.Kill(-pgid, sig), leaderExited, true)
}

// outputPipe is the pipe a command's stdout or stderr goes to (os.Pipe:
// darwin has no pipe2).
func outputPipe() (r, w *os.File, err error) { return pipe() }
