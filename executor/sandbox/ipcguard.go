package sandbox

import (
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/sandbox/ipcguard"
)

// The IPC guard (executor/sandbox/ipcguard) of the levels without network:
// their bwraps are started from the spawner's guard thread, which holds
// the guard's seccomp filter, so nothing in such a sandbox connects to a
// path socket or writes to a FIFO outside its private /tmp, and a write
// through a hard link goes to a copy. Where the guard cannot be
// installed, those starts fail, the probe (at read-only) with them, and
// confined levels are not offered: the guard fails closed.

// newGuard returns the guard of a Spawner; its Install is the plain
// spawner's SpawnerConfig.Guard.
func newGuard(log *zap.Logger) *ipcguard.Guard {
	return ipcguard.New(ipcguard.Config{Logger: log})
}

// guarded reports whether a command at level starts under the guard
// (always, at a confined level without network, unless a benchmark took
// the guard away).
func (s *Spawner) guarded(level executor.Level) bool {
	return s.guard != nil && level.Confined() && !level.Network()
}
