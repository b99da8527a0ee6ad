package local

import (
	"fmt"
	"os"
	"os/signal"

	"golang.org/x/sys/unix"
)

// MakeNonDumpable marks the calling process non-dumpable
// (prctl PR_SET_DUMPABLE 0), so a command running as the same user cannot
// read the daemon's environment (/proc/$PPID/environ) or memory. Root and
// holders of CAP_SYS_PTRACE still can; only a PID namespace hides it. The
// daemon calls it once at start; children are unaffected (exec resets it).
func MakeNonDumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl PR_SET_DUMPABLE: %w", err)
	}
	return nil
}

// ResetSignalDispositions makes commands start with default SIGHUP and
// SIGINT even when the daemon was started with them ignored. exec resets
// caught signals to their default but keeps ignored ones, and the Go runtime
// keeps an inherited ignore only for these two. For each one currently
// ignored it installs a handler whose notifications are discarded: the
// daemon keeps ignoring the signal, its children no longer inherit the
// ignore. The daemon calls it once at start.
func ResetSignalDispositions() {
	for _, sig := range []os.Signal{unix.SIGHUP, unix.SIGINT} {
		if signal.Ignored(sig) {
			signal.Notify(make(chan os.Signal, 1), sig)
		}
	}
}
