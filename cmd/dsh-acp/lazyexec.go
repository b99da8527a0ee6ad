package main

import (
	"context"
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
)

// localExecutor is what the local executor offers besides executor.Executor:
// sandbox levels and spill files (*sandbox.Executor is one).
type localExecutor interface {
	executor.Executor
	executor.Confiner
	SpillText(owner, base string, data []byte) (path string, err error)
	RemoveSpills(owner string) error
}

// lazyExecutor is a localExecutor built on first use: the daemon answers
// initialize before the pids cgroup, the spill directory and the spawn
// thread exist (the first session/new builds them, asking for its level).
// Calls that need no executor (reading or killing a task, which cannot
// exist yet; shutting down) do not build it. A build that fails is logged
// once; every later call that needs the executor fails with its error, and
// the levels offered are then LevelOff alone. It is safe for concurrent use.
type lazyExecutor struct {
	build func() (localExecutor, error)
	log   *zap.Logger
	// expect guesses, without building, the levels the executor will
	// offer and its default (Expected).
	expect func() ([]executor.Level, executor.Level)

	warmOnce sync.Once
	ready    chan struct{} // closed once Warm built the executor and probed its levels

	mu     sync.Mutex
	ex     localExecutor // nil until built
	err    error         // the failed build's error, or ErrClosed after Shutdown
	tried  bool
	subs   map[int]func(executor.TaskDone) // registered before the build
	unsubs map[int]func()                  // their registrations on ex
	nextID int
}

var _ localExecutor = (*lazyExecutor)(nil)

func newLazyExecutor(build func() (localExecutor, error), log *zap.Logger) *lazyExecutor {
	return &lazyExecutor{build: build, log: log, subs: map[int]func(executor.TaskDone){}, unsubs: map[int]func(){}, ready: make(chan struct{})}
}

// Warm builds the executor and probes its levels on a goroutine of its
// own, once: the daemon calls it once the initialize reply is out, so the
// first session/new does not wait for the build (see Ready, Expected).
func (l *lazyExecutor) Warm() {
	l.warmOnce.Do(func() {
		go func() {
			defer close(l.ready)
			if ex, err := l.get(); err == nil {
				ex.Levels()
			}
		}()
	})
}

// Ready is closed once Warm's build and probe ended: Levels, DefaultLevel
// and Unavailable then answer without waiting.
func (l *lazyExecutor) Ready() <-chan struct{} { return l.ready }

// Expected guesses the levels and the default level without building:
// what a session is offered until Ready.
func (l *lazyExecutor) Expected() ([]executor.Level, executor.Level) {
	if l.expect == nil {
		return []executor.Level{executor.LevelOff}, executor.LevelOff
	}
	return l.expect()
}

// get builds the executor on the first call and returns it, or the error
// that keeps it from being used.
func (l *lazyExecutor) get() (localExecutor, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.tried {
		l.tried = true
		l.ex, l.err = l.build()
		if l.err != nil {
			l.ex = nil
			l.err = fmt.Errorf("executor: %w", l.err)
			l.log.Error("cannot start the executor: commands fail", zap.Error(l.err))
		} else {
			for id, fn := range l.subs {
				l.unsubs[id] = l.ex.OnTaskDone(fn)
			}
		}
	}
	return l.ex, l.err
}

// built is the executor when it was built, else nil; it never builds.
func (l *lazyExecutor) built() localExecutor {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ex
}

// Resolve implements executor.Executor.
func (l *lazyExecutor) Resolve(req executor.Request) (executor.Spec, error) {
	ex, err := l.get()
	if err != nil {
		return executor.Spec{}, err
	}
	return ex.Resolve(req)
}

// Run implements executor.Executor.
func (l *lazyExecutor) Run(ctx context.Context, spec executor.Spec, observe func(executor.Chunk)) (executor.Result, error) {
	ex, err := l.get()
	if err != nil {
		return executor.Result{}, err
	}
	return ex.Run(ctx, spec, observe)
}

// Start implements executor.Executor.
func (l *lazyExecutor) Start(spec executor.Spec) (string, error) {
	ex, err := l.get()
	if err != nil {
		return "", err
	}
	return ex.Start(spec)
}

// Read implements executor.Executor; before the build no task exists.
func (l *lazyExecutor) Read(id, caller string) (executor.ReadResult, error) {
	if ex := l.built(); ex != nil {
		return ex.Read(id, caller)
	}
	return executor.ReadResult{}, &executor.UnknownTaskError{ID: id}
}

// Kill implements executor.Executor; before the build no task exists.
func (l *lazyExecutor) Kill(ctx context.Context, id, caller string) (executor.KillResult, error) {
	if ex := l.built(); ex != nil {
		return ex.Kill(ctx, id, caller)
	}
	return executor.KillResult{}, &executor.UnknownTaskError{ID: id}
}

// KillOwned implements executor.Executor.
func (l *lazyExecutor) KillOwned(ctx context.Context, owner string) {
	if ex := l.built(); ex != nil {
		ex.KillOwned(ctx, owner)
	}
}

// OwnerOf implements executor.Executor.
func (l *lazyExecutor) OwnerOf(id string) (string, bool) {
	if ex := l.built(); ex != nil {
		return ex.OwnerOf(id)
	}
	return "", false
}

// OnTaskDone implements executor.Executor: fn is registered on the
// executor when it is built (at once when it already is).
func (l *lazyExecutor) OnTaskDone(fn func(executor.TaskDone)) func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	id := l.nextID
	l.nextID++
	if l.ex != nil {
		l.unsubs[id] = l.ex.OnTaskDone(fn)
	} else {
		l.subs[id] = fn
	}
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.subs, id)
		if u, ok := l.unsubs[id]; ok {
			delete(l.unsubs, id)
			u()
		}
	}
}

// Shutdown implements executor.Executor. An executor never built has
// nothing to stop; it is not built afterwards (calls fail with ErrClosed).
func (l *lazyExecutor) Shutdown(ctx context.Context) error {
	l.mu.Lock()
	if !l.tried {
		l.tried, l.err = true, executor.ErrClosed
	}
	ex := l.ex
	l.mu.Unlock()
	if ex == nil {
		return nil
	}
	return ex.Shutdown(ctx)
}

// Levels implements executor.Confiner (it builds the executor: the
// levels are what its spawner can build).
func (l *lazyExecutor) Levels() []executor.Level {
	if ex, err := l.get(); err == nil {
		return ex.Levels()
	}
	return []executor.Level{executor.LevelOff}
}

// DefaultLevel implements executor.Confiner.
func (l *lazyExecutor) DefaultLevel() executor.Level {
	if ex, err := l.get(); err == nil {
		return ex.DefaultLevel()
	}
	return executor.LevelOff
}

// Unavailable implements executor.Confiner.
func (l *lazyExecutor) Unavailable() error {
	ex, err := l.get()
	if err != nil {
		return fmt.Errorf("%w: %w", executor.ErrSandbox, err)
	}
	return ex.Unavailable()
}

// SpillText implements mcp.Spiller.
func (l *lazyExecutor) SpillText(owner, base string, data []byte) (string, error) {
	ex, err := l.get()
	if err != nil {
		return "", err
	}
	return ex.SpillText(owner, base, data)
}

// RemoveSpills implements acp's spill remover (session/delete). It builds
// the executor: an earlier daemon's spill files of owner may be on disk.
func (l *lazyExecutor) RemoveSpills(owner string) error {
	ex, err := l.get()
	if err != nil {
		return err
	}
	return ex.RemoveSpills(owner)
}
