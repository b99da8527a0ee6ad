package sandbox

import (
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/local"
	"github.com/dsh-acp/dsh-acp/executor/sandbox/ipcguard"
)

// The IPC guards (executor/sandbox/ipcguard) of the confined levels, each
// installed on a spawn thread of its own (a local.Guard) from which the
// bwraps of its levels are started:
//
//   - read-only and workspace start under the whole guard: nothing in such
//     a sandbox connects to a path socket or writes to a FIFO outside its
//     private /tmp, and a write through a hard link goes to a copy;
//   - workspace-network starts under the links-only guard
//     (ipcguard.Config.LinksOnly): a write through a hard link goes to a
//     copy; sockets and FIFOs are left alone, the network being open.
//
// Where a guard cannot be installed, the starts of its levels fail (the
// probe, at read-only, with the whole guard's) and the levels are refused:
// the guards fail closed. The launch path is the same from every thread
// (see launcher and gate): only the filter the child inherits differs.
type guards struct {
	ipc   guard // read-only, workspace
	links guard // workspace-network
	// off, set by benchmarks only, starts every level from the spawn
	// thread, unguarded.
	off bool
}

// guard is one IPC guard and the spawn thread it is installed on.
type guard struct {
	filter *ipcguard.Guard
	thread *local.Guard
}

func newGuard(cfg ipcguard.Config) guard {
	f := ipcguard.New(cfg)
	return guard{filter: f, thread: local.NewGuard(f.Install)}
}

// newGuards returns a Spawner's guards; their threads go to the plain
// spawner's SpawnerConfig.Guards.
func newGuards(log *zap.Logger) guards {
	return guards{ipc: newGuard(ipcguard.Config{Logger: log}), links: newGuard(ipcguard.Config{Logger: log, LinksOnly: true})}
}

// threads are the guards' spawn threads.
func (g *guards) threads() []*local.Guard { return []*local.Guard{g.ipc.thread, g.links.thread} }

// of returns the thread a command at level starts from: nil (the spawn
// thread) at off, else its level's guard.
func (g *guards) of(level executor.Level) *local.Guard {
	switch {
	case g.off || !level.Confined():
		return nil
	case level.Network():
		return g.links.thread
	default:
		return g.ipc.thread
	}
}

// close stops both supervisors (after the plain spawner closed).
func (g *guards) close() {
	g.ipc.filter.Close()
	g.links.filter.Close()
}
