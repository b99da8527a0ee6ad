package local

import (
	"errors"
	"os"
	"runtime"
	"sync"
)

// guardThread is the Spawner's second spawn thread (SpawnerConfig.Guard):
// started on the first guarded start, locked for good, it runs setup once
// and then forks what the spawn thread hands it. Like the spawn thread, it
// lives as long as the Spawner, so a parent-death signal a child arms
// stays tied to a live thread.
type guardThread struct {
	setup func() error
	once  sync.Once
	reqs  chan func()
	err   error // setup's error, set before reqs is served
}

// errNoGuard is the error of a guarded start on a Spawner without Guard.
var errNoGuard = errors.New("local: a guarded start on a spawner without a guard")

// start forks path on the guard thread, in cg (on cgroup v1 the guard
// thread enters cg for the fork, as the spawn thread does). It is called
// on the spawn thread, so the guard thread serves one start at a time.
func (g *guardThread) start(path string, args []string, pa *os.ProcAttr, lim *limiter, cg *commandCgroup) (*os.Process, error) {
	if g.setup == nil {
		return nil, errNoGuard
	}
	g.once.Do(func() {
		g.reqs = make(chan func())
		ready := make(chan struct{})
		go g.run(ready)
		<-ready
	})
	if g.err != nil {
		return nil, g.err
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
func (g *guardThread) run(ready chan<- struct{}) {
	runtime.LockOSThread()
	g.err = g.setup()
	close(ready)
	for f := range g.reqs {
		f()
	}
}

// close ends the guard thread, if it was started. The spawn thread calls
// it when it ends, after the last start.
func (g *guardThread) close() {
	g.once.Do(func() {}) // none starts after this
	if g.reqs != nil {
		close(g.reqs)
	}
}
