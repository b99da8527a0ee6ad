package local

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/executor/engine"
)

// waitExit blocks until pid has exited, without reaping it.
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
func signalGroup(pgid int, sig syscall.Signal) error {
	if err := unix.Kill(-pgid, sig); err != nil && err != unix.ESRCH {
		return err
	}
	return nil
}

// exitOf reads a reaped process's end.
func exitOf(st *os.ProcessState) engine.Exit {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return engine.Exit{Code: -1, Signal: unix.SignalName(ws.Signal())}
	}
	return engine.Exit{Code: st.ExitCode()}
}
