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
	err       error         // setup's error, set before reqs is served
	ended     chan struct{} // closed when the thread has left its cgroup, last

	// On the guard thread only: the limiter of its starts and the command
	// cgroup it waits in for the next one (see start).
	lim   *limiter
	ready *commandCgroup
}

// NewGuard returns a Guard whose thread runs setup before its first start;
// when setup fails, every start from it fails with that error.
func NewGuard(setup func() error) *Guard { return &Guard{setup: setup} }

// errNoGuard is the error of a start from a Guard the Spawner was not
// given (SpawnerConfig.Guards).
var errNoGuard = errors.New("local: a start from a guard this spawner does not hold")

// start forks path on the guard thread, in a command cgroup of lim's (nil:
// none) that the thread took ahead of time: on cgroup v1 the thread already
// waits in it, as the spawn thread waits in its own (see limiter.prepare),
// so no task moves between cgroups on the start's path. It returns the
// process and its cgroup (nil when none could be had: cgErr says why).
// Once the caller has its answer, the thread moves on to the next
// command's cgroup, while the command runs. Starts from one guard are
// served one at a time; the caller holds the Spawner's lock against Close.
func (g *Guard) start(path string, args []string, pa *os.ProcAttr, lim *limiter) (proc *os.Process, cg *commandCgroup, cgErr, err error) {
	g.once.Do(func() {
		g.reqs = make(chan func())
		g.ended = make(chan struct{})
		ready := make(chan struct{})
		go g.run(ready)
		<-ready
	})
	if g.err != nil {
		return nil, nil, nil, g.err
	}
	if g.reqs == nil {
		return nil, nil, nil, ErrSpawnerClosed // closed before its first start
	}
	done := make(chan struct{})
	g.reqs <- func() {
		if lim != nil {
			g.lim = lim
			if cg, cgErr = lim.takeIn(&g.ready); cgErr == nil {
				cg.apply(pa.Sys)
			}
		}
		proc, err = os.StartProcess(path, args, pa)
		if err != nil && lim != nil {
			lim.prepareIn(&g.ready) // out of cg, which the caller removes
		}
		close(done)
		if err == nil && lim != nil {
			runtime.Gosched() // let the caller, woken on this thread's P, go on first
			lim.prepareIn(&g.ready)
		}
	}
	<-done
	return proc, cg, cgErr, err
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
	if g.lim != nil {
		g.lim.dropIn(&g.ready)
	}
	close(g.ended)
}

// close ends the guard thread, if it was started. The spawn thread calls
// it when it ends, after the last start.
func (g *Guard) close() {
	g.closeOnce.Do(func() {
		g.once.Do(func() {}) // none starts after this
		if g.reqs != nil {
			close(g.reqs)
			<-g.ended // out of its cgroup before the limiter removes it
		}
	})
}
