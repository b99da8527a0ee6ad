package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
)

// Executor runs commands as local processes. Create it with New.
type Executor struct {
	cfg    Config
	bash   string
	env    []string // scrubbed daemon environment + non-interactive settings
	spills *spillDir
	log    *zap.Logger

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

var _ executor.Executor = (*Executor)(nil)

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
}

// New returns an Executor for cfg (zero fields take their defaults). It
// snapshots and scrubs the process environment, creates or verifies
// <StateDir>/spill (an unsafe existing directory is an error wrapping
// ErrUnsafeDir) and removes spill files older than SpillMaxAge.
func New(cfg Config) (*Executor, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		return nil, fmt.Errorf("find bash: %w", err)
	}
	spills, err := openSpillDir(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	if n := spills.sweep(time.Now().Add(-cfg.SpillMaxAge)); n > 0 {
		cfg.Logger.Info("swept old spill files", zap.Int("removed", n))
	}
	return &Executor{
		cfg:    cfg,
		bash:   bash,
		env:    mergeEnv(ScrubEnv(os.Environ(), cfg.AllowEnv, cfg.SecretValues), nonInteractiveEnv),
		spills: spills,
		log:    cfg.Logger,
		procs:  make(map[*proc]struct{}),
		tasks:  make(map[string]*task),
		subs:   make(map[int]func(executor.TaskDone)),
	}, nil
}

// Resolve implements executor.Executor. A negative timeout is an error.
func (e *Executor) Resolve(req executor.Request) (executor.Spec, error) {
	if req.Timeout < 0 {
		return executor.Spec{}, fmt.Errorf("negative timeout %v", req.Timeout)
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
	return executor.Spec{
		Command: req.Command,
		Workdir: filepath.Clean(dir),
		Timeout: timeout,
		Owner:   req.Owner,
		Stdin:   append([]byte(nil), req.Stdin...),
		Env:     env,
	}, nil
}

// baseDir is the directory a relative or empty workdir is resolved against.
func (e *Executor) baseDir(sessionCwd string) (string, error) {
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
// at the very end are reported in a final chunk without Data.
func (e *Executor) Run(ctx context.Context, spec executor.Spec, observe func(executor.Chunk)) (executor.Result, error) {
	if err := ctx.Err(); err != nil {
		return executor.Result{}, fmt.Errorf("run: %w", err)
	}
	if spec.Timeout < 0 {
		return executor.Result{}, fmt.Errorf("negative timeout %v", spec.Timeout)
	}
	if spec.Timeout == 0 {
		spec.Timeout = e.cfg.DefaultTimeout
	}
	opts, err := e.prepare(spec)
	if err != nil {
		return executor.Result{}, err
	}
	n, err := e.enter()
	if err != nil {
		return executor.Result{}, err
	}
	defer e.inflight.Done()
	start := time.Now()
	p, err := startProc(spec, opts)
	if err != nil {
		return executor.Result{}, err
	}
	c := e.newCapture(spec.Owner, fmt.Sprintf("run-%d", n), true)
	var w sink = c
	var lv *live
	if observe != nil {
		lv = newLive(observe, liveLimit)
		w = teeSink{c, lv}
	}
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
	res := executor.Result{ExitCode: p.exitCode, Signal: p.signal, TimedOut: timedOut.Load(), Duration: time.Since(start)}
	c.result(&res)
	e.log.Debug("run finished", zap.Int("pid", p.pid), zap.Int("exit", res.ExitCode), zap.String("signal", res.Signal),
		zap.Bool("timed_out", res.TimedOut), zap.Duration("duration", res.Duration), zap.Int64("dropped", res.Dropped))
	return res, nil
}

// Start implements executor.Executor. No task is created when the workdir
// is invalid or the spawn fails.
func (e *Executor) Start(spec executor.Spec) (string, error) {
	opts, err := e.prepare(spec)
	if err != nil {
		return "", err
	}
	if _, err := e.enter(); err != nil {
		return "", err
	}
	p, err := startProc(spec, opts)
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
	p.begin(t.output, func() { e.finishTask(t) })
	e.log.Debug("task started", zap.String("id", id), zap.Int("pid", p.pid))
	return id, nil
}

func (e *Executor) finishTask(t *task) {
	t.output.finish()
	t.mu.Lock()
	t.status = executor.Completed
	if t.proc.stopped.Load() {
		t.status = executor.Killed
	}
	t.exitCode, t.signal = t.proc.exitCode, t.proc.signal
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
func (e *Executor) Read(id, caller string) (executor.ReadResult, error) {
	t, err := e.access(id, caller)
	if err != nil {
		return executor.ReadResult{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	// The status is read before the output: once it is final, all output is
	// already captured, so this Read returns the rest of it.
	r := executor.ReadResult{ID: id, Status: t.status, ExitCode: t.exitCode, Signal: t.signal}
	r.Output, r.Lost, t.cursor, r.SpillPath = t.output.since(t.cursor)
	if r.Status != executor.Running {
		t.output.release() // everything was read
	}
	return r, nil
}

// Kill implements executor.Executor. It waits for the task to die up to
// the grace period plus a margin, bounded by ctx; if the task is still
// dying then, the result says Running.
func (e *Executor) Kill(ctx context.Context, id, caller string) (executor.KillResult, error) {
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
func (e *Executor) KillOwned(ctx context.Context, owner string) {
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
func (e *Executor) OwnerOf(id string) (string, bool) {
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
func (e *Executor) OnTaskDone(fn func(executor.TaskDone)) func() {
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
func (e *Executor) Shutdown(ctx context.Context) error {
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
		e.closeOnce.Do(func() { _ = e.spills.close() })
		return nil
	case <-ctx.Done():
		return fmt.Errorf("shutdown: %w", ctx.Err())
	}
}

// access finds a task the caller may use.
func (e *Executor) access(id, caller string) (*task, error) {
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

// prepare validates spec and builds the process options.
func (e *Executor) prepare(spec executor.Spec) (procOpts, error) {
	if err := checkWorkdir(spec.Workdir); err != nil {
		return procOpts{}, err
	}
	env := e.env
	if len(spec.Env) > 0 {
		extra, err := specEnv(spec.Env)
		if err != nil {
			return procOpts{}, err
		}
		env = mergeEnv(e.env, extra)
	}
	return procOpts{bash: e.bash, env: env, grace: e.cfg.Grace, log: e.log}, nil
}

// checkWorkdir requires an absolute path to an existing directory.
func checkWorkdir(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("%w %q: not an absolute path", executor.ErrWorkdir, dir)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("%w %q: %w", executor.ErrWorkdir, dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w %q: not a directory", executor.ErrWorkdir, dir)
	}
	return nil
}

// enter admits a Run or Start unless shut down, and numbers it.
func (e *Executor) enter() (int, error) {
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
func (e *Executor) track(p *proc) {
	e.mu.Lock()
	closed := e.closed
	e.procs[p] = struct{}{}
	e.mu.Unlock()
	if closed {
		p.stop()
	}
}

func (e *Executor) untrack(p *proc) {
	e.mu.Lock()
	delete(e.procs, p)
	e.mu.Unlock()
}

func (e *Executor) newCapture(owner, base string, streams bool) *capture {
	return newCapture(captureOpts{
		size: e.cfg.CaptureBytes, streams: streams, spills: e.spills,
		owner: owner, base: base, spillCap: e.cfg.SpillCap, spillAfter: e.cfg.SpillAfter, log: e.log,
	})
}

// teeSink feeds the capture and the live observer.
type teeSink struct {
	c *capture
	l *live
}

func (s teeSink) write(st executor.Stream, p []byte) {
	s.c.write(st, p)
	s.l.push(st, p)
}
