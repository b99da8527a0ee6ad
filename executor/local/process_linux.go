package local

import (
	"fmt"

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
