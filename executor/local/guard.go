package local

import (
	"errors"
	"os"
	"runtime"
	"sync"
)

// A Guard is a spawn thread of its own for processes that must inherit
// state the Spawner's other children must not (a seccomp filter:
// executor/sandbox/ipcguard). Made by NewGuard and given to one Spawner in
// SpawnerConfig.Guards, it is started on its first start, locked for good,
// runs its setup once and then forks what the spawn thread hands it (a
// Launch whose Guard names it). Like the spawn thread, it lives as long as
// the Spawner, so a parent-death signal a child arms stays tied to a live
// thread. A Spawner may hold several, each with a setup of its own.
type Guard struct {
	setup     func() error
	once      sync.Once
	closeOnce sync.Once
	reqs      chan func()
	err       error // setup's error, set before reqs is served
}

// NewGuard returns a Guard whose thread runs setup before its first start;
// when setup fails, every start from it fails with that error.
func NewGuard(setup func() error) *Guard { return &Guard{setup: setup} }

// errNoGuard is the error of a start from a Guard the Spawner was not
// given (SpawnerConfig.Guards).
var errNoGuard = errors.New("local: a start from a guard this spawner does not hold")

// start forks path on the guard thread, in cg (on cgroup v1 the guard
// thread enters cg for the fork, as the spawn thread does). It is called
// on the spawn thread, so a guard thread serves one start at a time.
func (g *Guard) start(path string, args []string, pa *os.ProcAttr, lim *limiter, cg *commandCgroup) (*os.Process, error) {
	g.once.Do(func() {
		g.reqs = make(chan func())
		ready := make(chan struct{})
		go g.run(ready)
		<-ready
	})
	if g.err != nil {
		return nil, g.err
	}
	if g.reqs == nil {
		return nil, ErrSpawnerClosed // closed before its first start
	}
	var proc *os.Process
	var err error
	done := make(chan struct{})
	g.reqs <- func() {
		defer close(done)
		if lim != nil && cg != nil {
			if err = lim.enterGuard(cg); err != nil {
				return
			}
			defer lim.leaveGuard()
		}
		proc, err = os.StartProcess(path, args, pa)
	}
	<-done
	return proc, err
}

// run is the guard thread. It never unlocks: when close ends it, the Go
// runtime terminates the thread (and never clones another from it).
func (g *Guard) run(ready chan<- struct{}) {
	runtime.LockOSThread()
	g.err = g.setup()
	close(ready)
	for f := range g.reqs {
		f()
	}
}

// close ends the guard thread, if it was started. The spawn thread calls
// it when it ends, after the last start.
func (g *Guard) close() {
	g.closeOnce.Do(func() {
		g.once.Do(func() {}) // none starts after this
		if g.reqs != nil {
			close(g.reqs)
		}
	})
}
