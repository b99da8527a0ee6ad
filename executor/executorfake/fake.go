// Package executorfake is the one in-memory executor.Executor for tests
// above the seam (tools, agent, acp, presentation): no processes, every call
// recorded, results scripted or left to an in-memory task model that keeps
// the real contracts (ids "bash-1", "bash-2", …; the owner stamped for
// life; *executor.OwnerError and *executor.UnknownTaskError; incremental
// reads; one completion notice per task; ErrClosed after Shutdown).
//
//	ex := executorfake.New()
//	ex.Result = executor.Result{Stdout: []byte("hi\n"), Combined: []byte("hi\n")}
//	ex.Chunks = []executor.Chunk{{Stream: executor.Stdout, Data: []byte("hi\n")}}
//	// … drive the tool; then inspect ex.Calls().
//
// Background tasks: Start creates a running task; Write appends its output,
// Finish ends it (and notifies OnTaskDone subscribers); Kill ends it as
// Killed with SIGKILL. Set ReadFunc, KillFunc or StartFunc to answer those
// calls with scripted values instead.
//
// The script fields (Chunks, Result, RunErr, …) may be set before the fake
// is used, or later under Lock/Unlock.
package executorfake

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
)

// Defaults of Resolve.
const (
	DefaultWorkdir = "/executor/default"
	DefaultTimeout = 120 * time.Second
	MaxTimeout     = 600 * time.Second
)

// Executor is the fake. Create it with New; all methods are safe for
// concurrent use.
type Executor struct {
	mu sync.Mutex

	// ResolveErr, when set, is Resolve's answer.
	ResolveErr error
	// Chunks are sent to Run's observer, in order, before it returns.
	Chunks []executor.Chunk
	// Result and RunErr are Run's answer.
	Result executor.Result
	RunErr error
	// RunHook, when set, is called inside Run after the chunks (e.g. to
	// block until ctx is cancelled).
	RunHook func(ctx context.Context, spec executor.Spec)
	// StartFunc, ReadFunc and KillFunc, when set, answer those calls
	// instead of the in-memory task model.
	StartFunc func(spec executor.Spec) (string, error)
	ReadFunc  func(id, caller string) (executor.ReadResult, error)
	KillFunc  func(id, caller string) (executor.KillResult, error)

	// LevelsOffered, Default and Why make up the Confiner answers
	// (defaults: every level, LevelWorkspace, nil).
	LevelsOffered []executor.Level
	Default       executor.Level
	Why           error

	calls   Calls
	tasks   map[string]*task
	nextID  int
	subs    map[int]func(executor.TaskDone)
	nextSub int
	closed  bool
}

var (
	_ executor.Executor = (*Executor)(nil)
	_ executor.Confiner = (*Executor)(nil)
)

// Calls is what the fake received, in order.
type Calls struct {
	Requests  []executor.Request
	Runs      []executor.Spec
	Starts    []executor.Spec
	Reads     []Access
	Kills     []Access
	KillOwned []string
	Shutdowns int
}

// Access is one Read or Kill: the task id and the caller.
type Access struct{ ID, Caller string }

type task struct {
	spec   executor.Spec
	output []byte
	cursor int
	status executor.TaskStatus
	code   int
	signal string
}

// New returns an empty fake.
func New() *Executor {
	return &Executor{tasks: map[string]*task{}, subs: map[int]func(executor.TaskDone){}}
}

// Lock and Unlock guard script changes once the fake is in use.
func (f *Executor) Lock()   { f.mu.Lock() }
func (f *Executor) Unlock() { f.mu.Unlock() }

// Calls returns a copy of everything received so far.
func (f *Executor) Calls() Calls {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	c.Requests, c.Runs, c.Starts = slices.Clone(c.Requests), slices.Clone(c.Runs), slices.Clone(c.Starts)
	c.Reads, c.Kills, c.KillOwned = slices.Clone(c.Reads), slices.Clone(c.Kills), slices.Clone(c.KillOwned)
	return c
}

// Resolve implements executor.Executor with the real rules: a relative
// workdir joins SessionCwd (else DefaultWorkdir), an empty one becomes
// SessionCwd or DefaultWorkdir; the timeout defaults to DefaultTimeout and
// is clamped to MaxTimeout; an empty level becomes DefaultLevel.
func (f *Executor) Resolve(req executor.Request) (executor.Spec, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls.Requests = append(f.calls.Requests, req)
	if f.ResolveErr != nil {
		return executor.Spec{}, f.ResolveErr
	}
	if req.Timeout < 0 {
		return executor.Spec{}, fmt.Errorf("negative timeout %v", req.Timeout)
	}
	base := req.SessionCwd
	if base == "" {
		base = DefaultWorkdir
	}
	wd := req.Workdir
	if !filepath.IsAbs(wd) {
		wd = filepath.Join(base, wd)
	}
	timeout := req.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	level := req.Level
	if level == "" {
		level = f.defaultLevel()
	}
	if _, err := executor.ParseLevel(string(level)); err != nil {
		return executor.Spec{}, err
	}
	return executor.Spec{Command: req.Command, Workdir: filepath.Clean(wd), Timeout: min(timeout, MaxTimeout),
		Owner: req.Owner, Level: level, Workspace: base, Stdin: req.Stdin, Env: req.Env}, nil
}

// Run implements executor.Executor: it records spec, refuses a level not
// offered (ErrSandbox), sends Chunks, calls RunHook and answers Result and
// RunErr.
func (f *Executor) Run(ctx context.Context, spec executor.Spec, observe func(executor.Chunk)) (executor.Result, error) {
	f.mu.Lock()
	f.calls.Runs = append(f.calls.Runs, spec)
	if err := f.admit(spec); err != nil {
		f.mu.Unlock()
		return executor.Result{}, err
	}
	chunks, res, err, hook := f.Chunks, f.Result, f.RunErr, f.RunHook
	f.mu.Unlock()
	if observe != nil {
		for _, c := range chunks {
			observe(c)
		}
	}
	if hook != nil {
		hook(ctx, spec)
	}
	return res, err
}

// admit checks closed and the level. Called with mu held.
func (f *Executor) admit(spec executor.Spec) error {
	if f.closed {
		return executor.ErrClosed
	}
	level := spec.Level
	if level == "" {
		level = f.defaultLevel()
	}
	if !slices.Contains(f.levels(), level) {
		why := f.Why
		if why == nil {
			why = executor.ErrSandbox
		}
		return fmt.Errorf("sandbox level %s: %w", level, why)
	}
	return nil
}

// Start implements executor.Executor: a running in-memory task (or
// StartFunc's answer).
func (f *Executor) Start(spec executor.Spec) (string, error) {
	f.mu.Lock()
	f.calls.Starts = append(f.calls.Starts, spec)
	if err := f.admit(spec); err != nil {
		f.mu.Unlock()
		return "", err
	}
	if fn := f.StartFunc; fn != nil {
		f.mu.Unlock()
		return fn(spec)
	}
	defer f.mu.Unlock()
	f.nextID++
	id := fmt.Sprintf("bash-%d", f.nextID)
	f.tasks[id] = &task{spec: spec, status: executor.Running}
	return id, nil
}

// Write appends output to a running task; it reports false for an unknown
// or finished task.
func (f *Executor) Write(id, output string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.tasks[id]
	if !ok || t.status != executor.Running {
		return false
	}
	t.output = append(t.output, output...)
	return true
}

// Finish completes a running task with code (or a signal name) and
// notifies the subscribers; it reports false for an unknown or finished
// task.
func (f *Executor) Finish(id string, code int, signal string) bool {
	return f.end(id, executor.Completed, code, signal)
}

func (f *Executor) end(id string, status executor.TaskStatus, code int, signal string) bool {
	f.mu.Lock()
	t, ok := f.tasks[id]
	if !ok || t.status != executor.Running {
		f.mu.Unlock()
		return false
	}
	if signal != "" {
		code = -1
	}
	t.status, t.code, t.signal = status, code, signal
	done := executor.TaskDone{ID: id, Owner: t.spec.Owner, Command: t.spec.Command, Status: status, ExitCode: code, Signal: signal}
	subs := make([]func(executor.TaskDone), 0, len(f.subs))
	for _, k := range slices.Sorted(maps.Keys(f.subs)) {
		subs = append(subs, f.subs[k])
	}
	f.mu.Unlock()
	for _, fn := range subs {
		fn(done)
	}
	return true
}

// Notify sends d to the subscribers as is (for scripted task ids).
func (f *Executor) Notify(d executor.TaskDone) {
	f.mu.Lock()
	subs := make([]func(executor.TaskDone), 0, len(f.subs))
	for _, k := range slices.Sorted(maps.Keys(f.subs)) {
		subs = append(subs, f.subs[k])
	}
	f.mu.Unlock()
	for _, fn := range subs {
		fn(d)
	}
}

// Read implements executor.Executor: the output written since the
// previous Read (or ReadFunc's answer).
func (f *Executor) Read(id, caller string) (executor.ReadResult, error) {
	f.mu.Lock()
	f.calls.Reads = append(f.calls.Reads, Access{id, caller})
	if fn := f.ReadFunc; fn != nil {
		f.mu.Unlock()
		return fn(id, caller)
	}
	defer f.mu.Unlock()
	t, err := f.access(id, caller)
	if err != nil {
		return executor.ReadResult{}, err
	}
	r := executor.ReadResult{ID: id, Output: slices.Clone(t.output[t.cursor:]), Status: t.status, ExitCode: t.code, Signal: t.signal}
	t.cursor = len(t.output)
	return r, nil
}

// Kill implements executor.Executor: a running task ends Killed by
// SIGKILL (or KillFunc answers).
func (f *Executor) Kill(_ context.Context, id, caller string) (executor.KillResult, error) {
	f.mu.Lock()
	f.calls.Kills = append(f.calls.Kills, Access{id, caller})
	if fn := f.KillFunc; fn != nil {
		f.mu.Unlock()
		return fn(id, caller)
	}
	t, err := f.access(id, caller)
	f.mu.Unlock()
	if err != nil {
		return executor.KillResult{}, err
	}
	already := !f.end(id, executor.Killed, -1, "SIGKILL")
	f.mu.Lock()
	defer f.mu.Unlock()
	return executor.KillResult{ID: id, AlreadyFinished: already, Status: t.status, ExitCode: t.code, Signal: t.signal}, nil
}

// access finds a task the caller may use. Called with mu held.
func (f *Executor) access(id, caller string) (*task, error) {
	t, ok := f.tasks[id]
	if !ok {
		return nil, &executor.UnknownTaskError{ID: id}
	}
	if !executor.Accessible(t.spec.Owner, caller) {
		return nil, &executor.OwnerError{ID: id}
	}
	return t, nil
}

// KillOwned implements executor.Executor.
func (f *Executor) KillOwned(_ context.Context, owner string) {
	f.mu.Lock()
	f.calls.KillOwned = append(f.calls.KillOwned, owner)
	var ids []string
	for id, t := range f.tasks {
		if t.spec.Owner == owner && t.status == executor.Running {
			ids = append(ids, id)
		}
	}
	f.mu.Unlock()
	slices.Sort(ids)
	for _, id := range ids {
		f.end(id, executor.Killed, -1, "SIGKILL")
	}
}

// OwnerOf implements executor.Executor.
func (f *Executor) OwnerOf(id string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.tasks[id]
	if !ok {
		return "", false
	}
	return t.spec.Owner, true
}

// OnTaskDone implements executor.Executor; subscribers are called in
// subscription order, on the goroutine that ended the task.
func (f *Executor) OnTaskDone(fn func(executor.TaskDone)) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.nextSub
	f.nextSub++
	f.subs[id] = fn
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.subs, id)
	}
}

// Shutdown implements executor.Executor: every running task ends Killed;
// later Run and Start fail with ErrClosed.
func (f *Executor) Shutdown(context.Context) error {
	f.mu.Lock()
	f.calls.Shutdowns++
	f.closed = true
	var ids []string
	for id, t := range f.tasks {
		if t.status == executor.Running {
			ids = append(ids, id)
		}
	}
	f.mu.Unlock()
	slices.Sort(ids)
	for _, id := range ids {
		f.end(id, executor.Killed, -1, "SIGKILL")
	}
	return nil
}

// Levels implements executor.Confiner.
func (f *Executor) Levels() []executor.Level {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.levels()
}

func (f *Executor) levels() []executor.Level {
	if f.LevelsOffered != nil {
		return slices.Clone(f.LevelsOffered)
	}
	return executor.AllLevels()
}

// DefaultLevel implements executor.Confiner.
func (f *Executor) DefaultLevel() executor.Level {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.defaultLevel()
}

func (f *Executor) defaultLevel() executor.Level {
	if f.Default != "" {
		return f.Default
	}
	return executor.LevelWorkspace
}

// Unavailable implements executor.Confiner.
func (f *Executor) Unavailable() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.Why
}
