package local

import (
	"os"
	"os/signal"
	"syscall"
)

// ResetSignalDispositions makes commands start with default SIGHUP and
// SIGINT even when the daemon was started with them ignored. exec resets
// caught signals to their default but keeps ignored ones, and the Go runtime
// keeps an inherited ignore only for these two. For each one currently
// ignored it installs a handler whose notifications are discarded: the
// daemon keeps ignoring the signal, its children no longer inherit the
// ignore. The daemon calls it once at start.
func ResetSignalDispositions() {
	for _, sig := range []os.Signal{syscall.SIGHUP, syscall.SIGINT} {
		if signal.Ignored(sig) {
			signal.Notify(make(chan os.Signal, 1), sig)
		}
	}
}
