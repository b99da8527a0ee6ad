package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
)

// Engine is an executor.Executor built on a Spawner. Create it with New.
type Engine struct {
	cfg     Config
	spawner Spawner
	env     []string // base environment + non-interactive settings
	spills  *spillDir
	redact  *redactor  // nil: no secrets to redact
	store   SpillStore // where captures spill: spills, or the spawner's
	log     *zap.Logger

	mu        sync.Mutex
	closed    bool
	procs     map[*proc]struct{} // running, foreground and background
	inflight  sync.WaitGroup     // Runs in progress and unfinished tasks
	runs      int                // foreground counter, names spill files
	closeOnce sync.Once

	tmu    sync.RWMutex
	tasks  map[string]*task
	nextID int

	smu     sync.Mutex
	subs    map[int]func(executor.TaskDone)
	nextSub int
}

var (
	_ executor.Executor = (*Engine)(nil)
	_ executor.Confiner = (*Engine)(nil)
)

// task is a background command. Its owner is fixed at Start.
type task struct {
	id, owner, command string
	proc               *proc
	output             *capture
	done               chan struct{} // closed once status is final

	mu       sync.Mutex
	cursor   int64 // interleaved-stream offset the next Read starts at
	status   executor.TaskStatus
	exitCode int
	signal   string
	limitHit string
}

// New returns an Engine that starts commands with sp, for cfg (zero fields
// take their defaults). It creates or verifies <StateDir>/spill and removes
// spill files older than SpillMaxAge. An unsafe spill directory (see
// spillDir) is logged, not an error: commands run, and results that would
// name a spill file say why there is none. Shutdown closes sp when it is a
// Closer.
func New(sp Spawner, cfg Config) (*Engine, error) {
	if sp == nil {
		return nil, errors.New("engine: nil spawner")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	spills, err := openSpillDir(cfg.StateDir, cfg.Logger)
	if err != nil {
		return nil, err
	}
	if n := spills.sweep(time.Now().Add(-cfg.SpillMaxAge)); n > 0 {
		cfg.Logger.Info("swept old spill files", zap.Int("removed", n))
	}
	var store SpillStore = spills
	if s, ok := sp.(Spiller); ok {
		store = s.Spills()
	}
	return &Engine{
		cfg:     cfg,
		spawner: sp,
		env:     lastOfEach(mergeEnv(cfg.BaseEnv, nonInteractiveEnv)),
		spills:  spills,
		redact:  newRedactor(cfg.Redact),
		store:   store,
		log:     cfg.Logger,
		procs:   make(map[*proc]struct{}),
		tasks:   make(map[string]*task),
		subs:    make(map[int]func(executor.TaskDone)),
	}, nil
}

// lastOfEach keeps the last entry of each name in env ("NAME=value"), in
// the order of those entries: what os/exec does to an environment on every
// start, done once here, since a Spawner passes Command.Env as it is.
func lastOfEach(env []string) []string {
	seen := make(map[string]bool, len(env))
	out := make([]string, 0, len(env))
	for i := len(env) - 1; i >= 0; i-- {
		name, _, _ := strings.Cut(env[i], "=")
		if !seen[name] {
			seen[name] = true
			out = append(out, env[i])
		}
	}
	slices.Reverse(out)
	return out
}

// StateDir is the absolute state directory the engine's spill files live
// under (<StateDir>/spill).
func (e *Engine) StateDir() string { return filepath.Dir(e.spills.path) }

// Levels implements executor.Confiner: the spawner's levels, or LevelOff
// alone for a spawner that does not confine.
func (e *Engine) Levels() []executor.Level {
	if l, ok := e.spawner.(Leveler); ok {
		return l.Levels()
	}
	return []executor.Level{executor.LevelOff}
}

// DefaultLevel implements executor.Confiner.
func (e *Engine) DefaultLevel() executor.Level {
	if l, ok := e.spawner.(Leveler); ok {
		return l.DefaultLevel()
	}
	return executor.LevelOff
}

// Unavailable implements executor.Confiner.
func (e *Engine) Unavailable() error {
	if l, ok := e.spawner.(Leveler); ok {
		return l.Unavailable()
	}
	return errNoSandbox
}

var errNoSandbox = fmt.Errorf("%w: this executor runs commands unconfined", executor.ErrSandbox)

// checkLevel resolves an empty level to the default and refuses one the
// spawner cannot build, with an error wrapping executor.ErrSandbox.
func (e *Engine) checkLevel(l executor.Level) (executor.Level, error) {
	if l == "" {
		l = e.DefaultLevel()
	}
	if !l.Valid() {
		_, err := executor.ParseLevel(string(l))
		return "", fmt.Errorf("%w: %w", executor.ErrSandbox, err)
	}
	if slices.Contains(e.Levels(), l) {
		return l, nil
	}
	why := e.Unavailable()
	if why == nil {
		why = fmt.Errorf("%w: level %s is not offered here", executor.ErrSandbox, l)
	}
	return "", fmt.Errorf("sandbox level %s: %w", l, why)
}

// Resolve implements executor.Executor. A negative timeout or an unknown
// level is an error; an empty level becomes DefaultLevel. Whether the level
// can be built is checked by Run and Start.
func (e *Engine) Resolve(req executor.Request) (executor.Spec, error) {
	if req.Timeout < 0 {
		return executor.Spec{}, fmt.Errorf("negative timeout %v", req.Timeout)
	}
	level := req.Level
	if level == "" {
		level = e.DefaultLevel()
	}
	if _, err := executor.ParseLevel(string(level)); err != nil {
		return executor.Spec{}, err
	}
	timeout := req.Timeout
	if timeout == 0 {
		timeout = e.cfg.DefaultTimeout
	}
	timeout = min(timeout, e.cfg.MaxTimeout)
	dir := req.Workdir
	if dir == "" || !filepath.IsAbs(dir) {
		base, err := e.baseDir(req.SessionCwd)
		if err != nil {
			return executor.Spec{}, err
		}
		dir = filepath.Join(base, dir)
	}
	var env map[string]string
	if req.Env != nil {
		env = make(map[string]string, len(req.Env))
		for k, v := range req.Env {
			env[k] = v
		}
	}
	dir = filepath.Clean(dir)
	workspace := dir
	if req.SessionCwd != "" {
		abs, err := filepath.Abs(req.SessionCwd)
		if err != nil {
			return executor.Spec{}, fmt.Errorf("resolve session cwd: %w", err)
		}
		workspace = abs
	}
	return executor.Spec{
		Command:   req.Command,
		Workdir:   dir,
		Timeout:   timeout,
		Owner:     req.Owner,
		Level:     level,
		Workspace: workspace,
		Roots:     cleanRoots(req.Roots),
		Stdin:     append([]byte(nil), req.Stdin...),
		Env:       env,
	}, nil
}

// baseDir is the directory a relative or empty workdir is resolved against.
func (e *Engine) baseDir(sessionCwd string) (string, error) {
	for _, d := range []string{sessionCwd, e.cfg.DefaultWorkdir} {
		if d != "" {
			abs, err := filepath.Abs(d)
			if err != nil {
				return "", fmt.Errorf("resolve workdir: %w", err)
			}
			return abs, nil
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("resolve workdir: %w", err)
	}
	return wd, nil
}

// Run implements executor.Executor. A zero spec.Timeout means the default;
// a cancelled ctx before the start is an error, after it a normal Result.
// Before Run returns, every process of the command's group has been sent
// SIGKILL and the last chunk has been delivered to observe. While output
// streams, observe gets at most one batch of chunks per 10 ms; bytes dropped
// at the very end are reported in a final chunk without Data. A process
// that ends with Exit.Err (a remote connection lost under it) makes Run
// return that error, with the Result captured so far.
func (e *Engine) Run(ctx context.Context, spec executor.Spec, observe func(executor.Chunk)) (executor.Result, error) {
	if err := ctx.Err(); err != nil {
		return executor.Result{}, fmt.Errorf("run: %w", err)
	}
	if spec.Timeout < 0 {
		return executor.Result{}, fmt.Errorf("negative timeout %v", spec.Timeout)
	}
	if spec.Timeout == 0 {
		spec.Timeout = e.cfg.DefaultTimeout
	}
	cmd, err := e.prepare(spec)
	if err != nil {
		return executor.Result{}, err
	}
	n, err := e.enter()
	if err != nil {
		return executor.Result{}, err
	}
	defer e.inflight.Done()
	start := time.Now()
	p, err := e.spawn(cmd)
	if err != nil {
		return executor.Result{}, err
	}
	c := e.newCapture(spec.Owner, fmt.Sprintf("run-%d", n), true)
	var lv *live
	if observe != nil {
		lv = newLive(observe, c) // delivers from c's ring
	}
	w := newRedactSink(e.redact, c)
	e.track(p)
	var timedOut atomic.Bool
	timer := time.AfterFunc(spec.Timeout, func() {
		select {
		case <-p.exited: // finished on its own just in time
		default:
			timedOut.Store(true)
			p.stop()
		}
	})
	stopOnCancel := context.AfterFunc(ctx, p.stop)
	p.begin(w, func() {
		c.finish()
		e.untrack(p)
	})
	<-p.done
	timer.Stop()
	stopOnCancel()
	if lv != nil {
		lv.close()
		<-lv.finished
	}
	res := executor.Result{ExitCode: p.exit.Code, Signal: p.exit.Signal, LimitHit: p.exit.LimitHit, TimedOut: timedOut.Load(), Duration: time.Since(start)}
	c.result(&res)
	e.log.Debug("run finished", zap.String("process", p.p.ID()), zap.Int("exit", res.ExitCode), zap.String("signal", res.Signal),
		zap.Bool("timed_out", res.TimedOut), zap.Duration("duration", res.Duration), zap.Int64("dropped", res.Dropped))
	if p.exit.Err != nil {
		// The command's fate is unknown: an infrastructure error, with the
		// output captured so far.
		return res, p.exit.Err
	}
	return res, nil
}

// Start implements executor.Executor. No task is created when the workdir
// is invalid, the level cannot be built or the spawn fails.
func (e *Engine) Start(spec executor.Spec) (string, error) {
	cmd, err := e.prepare(spec)
	if err != nil {
		return "", err
	}
	if _, err := e.enter(); err != nil {
		return "", err
	}
	p, err := e.spawn(cmd)
	if err != nil {
		e.inflight.Done()
		return "", err
	}
	e.tmu.Lock()
	e.nextID++
	id := fmt.Sprintf("bash-%d", e.nextID)
	t := &task{
		id: id, owner: spec.Owner, command: spec.Command, proc: p,
		output: e.newCapture(spec.Owner, id, false),
		done:   make(chan struct{}),
		status: executor.Running,
	}
	e.tasks[id] = t
	e.tmu.Unlock()
	e.track(p)
	p.begin(newRedactSink(e.redact, t.output), func() { e.finishTask(t) })
	e.log.Debug("task started", zap.String("id", id), zap.String("process", p.p.ID()))
	return id, nil
}

func (e *Engine) finishTask(t *task) {
	if err := t.proc.exit.Err; err != nil {
		// The reader of a task's output learns why it ended.
		t.output.write(executor.Stderr, []byte("dsh-acp: "+err.Error()+"\n"))
	}
	t.output.finish()
	t.mu.Lock()
	t.status = executor.Completed
	if t.proc.stopped.Load() || t.proc.exit.Err != nil {
		t.status = executor.Killed
	}
	t.exitCode, t.signal, t.limitHit = t.proc.exit.Code, t.proc.exit.Signal, t.proc.exit.LimitHit
	done := executor.TaskDone{ID: t.id, Owner: t.owner, Command: t.command, Status: t.status, ExitCode: t.exitCode, Signal: t.signal}
	t.mu.Unlock()
	close(t.done)
	e.untrack(t.proc)
	e.log.Debug("task finished", zap.String("id", t.id), zap.Stringer("status", done.Status), zap.Int("exit", done.ExitCode))
	e.smu.Lock()
	subs := make([]func(executor.TaskDone), 0, len(e.subs))
	for _, fn := range e.subs {
		subs = append(subs, fn)
	}
	e.smu.Unlock()
	for _, fn := range subs {
		fn(done)
	}
	e.inflight.Done()
}

// Read implements executor.Executor.
func (e *Engine) Read(id, caller string) (executor.ReadResult, error) {
	t, err := e.access(id, caller)
	if err != nil {
		return executor.ReadResult{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	// The status is read before the output: once it is final, all output is
	// already captured, so this Read returns the rest of it.
	r := executor.ReadResult{ID: id, Status: t.status, ExitCode: t.exitCode, Signal: t.signal, LimitHit: t.limitHit}
	t.cursor = t.output.since(t.cursor, &r)
	if r.Status != executor.Running {
		t.output.release() // everything was read
	}
	return r, nil
}

// Kill implements executor.Executor. It waits for the task to die up to
// the grace period plus a margin, bounded by ctx; if the task is still
// dying then, the result says Running.
func (e *Engine) Kill(ctx context.Context, id, caller string) (executor.KillResult, error) {
	t, err := e.access(id, caller)
	if err != nil {
		return executor.KillResult{}, err
	}
	already := true
	select {
	case <-t.proc.exited:
	default:
		already = false
		t.proc.stop()
	}
	bound := time.NewTimer(e.cfg.Grace + 2*drainWindow + time.Second)
	defer bound.Stop()
	select {
	case <-t.done:
	case <-bound.C:
	case <-ctx.Done():
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return executor.KillResult{ID: id, AlreadyFinished: already, Status: t.status, ExitCode: t.exitCode, Signal: t.signal}, nil
}

// KillOwned implements executor.Executor. Tasks are matched by exact owner.
func (e *Engine) KillOwned(ctx context.Context, owner string) {
	var owned []*task
	e.tmu.RLock()
	for _, t := range e.tasks {
		if t.owner == owner {
			owned = append(owned, t)
		}
	}
	e.tmu.RUnlock()
	for _, t := range owned {
		t.proc.stop()
	}
	for _, t := range owned {
		select {
		case <-t.done:
		case <-ctx.Done():
			return
		}
	}
}

// OwnerOf implements executor.Executor.
func (e *Engine) OwnerOf(id string) (string, bool) {
	e.tmu.RLock()
	defer e.tmu.RUnlock()
	t, ok := e.tasks[id]
	if !ok {
		return "", false
	}
	return t.owner, true
}

// OnTaskDone implements executor.Executor. fn runs on the finished task's
// supervising goroutine, after its final status is readable.
func (e *Engine) OnTaskDone(fn func(executor.TaskDone)) func() {
	e.smu.Lock()
	id := e.nextSub
	e.nextSub++
	e.subs[id] = fn
	e.smu.Unlock()
	return func() {
		e.smu.Lock()
		delete(e.subs, id)
		e.smu.Unlock()
	}
}

// Shutdown implements executor.Executor: every process group this executor
// started is stopped through the kill path (TERM, grace, KILL) and waited
// for, bounded by ctx.
func (e *Engine) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	e.closed = true
	procs := make([]*proc, 0, len(e.procs))
	for p := range e.procs {
		procs = append(procs, p)
	}
	e.mu.Unlock()
	for _, p := range procs {
		p.stop()
	}
	idle := make(chan struct{})
	go func() {
		e.inflight.Wait()
		close(idle)
	}()
	select {
	case <-idle:
		var err error
		e.closeOnce.Do(func() {
			_ = e.spills.close()
			if c, ok := e.spawner.(Closer); ok {
				err = c.Close()
			}
		})
		return err
	case <-ctx.Done():
		return fmt.Errorf("shutdown: %w", ctx.Err())
	}
}

// access finds a task the caller may use.
func (e *Engine) access(id, caller string) (*task, error) {
	e.tmu.RLock()
	t, ok := e.tasks[id]
	e.tmu.RUnlock()
	if !ok {
		return nil, &executor.UnknownTaskError{ID: id}
	}
	if !executor.Accessible(t.owner, caller) {
		return nil, &executor.OwnerError{ID: id}
	}
	return t, nil
}

// prepare validates spec and builds the Command for the spawner.
func (e *Engine) prepare(spec executor.Spec) (Command, error) {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return Command{}, executor.ErrClosed
	}
	level, err := e.checkLevel(spec.Level)
	if err != nil {
		return Command{}, err
	}
	spec.Level = level
	if spec.Workspace == "" {
		spec.Workspace = spec.Workdir
	}
	env := e.env
	if len(spec.Env) > 0 {
		extra, err := specEnv(spec.Env)
		if err != nil {
			return Command{}, err
		}
		env = mergeEnv(e.env, extra)
	}
	cmd := Command{Spec: spec, Env: env}
	if level.Confined() {
		// A refused spill directory is not shown to the command: no
		// spill file will be made in it either.
		if dir, err := e.spills.ownerDir(spec.Owner); err == nil {
			cmd.SpillDir = dir
		}
	}
	return cmd, nil
}

// spawn starts cmd and wraps it for supervision.
func (e *Engine) spawn(cmd Command) (*proc, error) {
	p, err := e.spawner.Spawn(cmd)
	if err != nil {
		return nil, err
	}
	return newProc(p, e.cfg.Grace, e.log), nil
}

// enter admits a Run or Start unless shut down, and numbers it.
func (e *Engine) enter() (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return 0, executor.ErrClosed
	}
	e.inflight.Add(1)
	e.runs++
	return e.runs, nil
}

// track registers a started process for Shutdown; one started while
// Shutdown ran is stopped at once.
func (e *Engine) track(p *proc) {
	e.mu.Lock()
	closed := e.closed
	e.procs[p] = struct{}{}
	e.mu.Unlock()
	if closed {
		p.stop()
	}
}

func (e *Engine) untrack(p *proc) {
	e.mu.Lock()
	delete(e.procs, p)
	e.mu.Unlock()
}

func (e *Engine) newCapture(owner, base string, streams bool) *capture {
	return newCapture(captureOpts{
		size: e.cfg.CaptureBytes, streams: streams, spills: e.store,
		owner: owner, base: base, spillCap: e.cfg.SpillCap, spillAfter: e.cfg.SpillAfter, log: e.log,
	})
}

// cleanRoots is roots cleaned, relative ones left out (a session's
// additional directories were checked absolute; nothing relative may
// widen a sandbox).
func cleanRoots(roots []string) []string {
	var out []string
	for _, r := range roots {
		if filepath.IsAbs(r) {
			out = append(out, filepath.Clean(r))
		}
	}
	return out
}
