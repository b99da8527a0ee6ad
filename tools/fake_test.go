package tools_test

import (
	"context"
	"path/filepath"
	"sync"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
)

// fakeExec is a recording, scripted executor.Executor: it records every
// Request and Spec it receives and answers with the scripted values.
type fakeExec struct {
	mu       sync.Mutex
	requests []executor.Request
	runs     []executor.Spec
	starts   []executor.Spec
	reads    [][2]string // id, caller
	kills    [][2]string

	resolveErr error
	chunks     []executor.Chunk // sent to Run's observer before it returns
	result     executor.Result
	runErr     error
	runHook    func(ctx context.Context) // called inside Run, after the chunks
	startID    string
	startErr   error
	readRes    executor.ReadResult
	readErr    error
	killRes    executor.KillResult
	killErr    error
	subs       map[int]func(executor.TaskDone)
	nextSub    int
}

var _ executor.Executor = (*fakeExec)(nil)

const (
	fakeDefaultWorkdir = "/executor/default"
	fakeDefaultTimeout = 120 * time.Second
	fakeMaxTimeout     = 600 * time.Second
)

// Resolve mimics the contract: relative workdirs join SessionCwd, empty
// ones become SessionCwd or the executor default; timeouts default and clamp.
func (f *fakeExec) Resolve(req executor.Request) (executor.Spec, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, req)
	if f.resolveErr != nil {
		return executor.Spec{}, f.resolveErr
	}
	wd := req.Workdir
	switch {
	case wd == "" && req.SessionCwd != "":
		wd = req.SessionCwd
	case wd == "":
		wd = fakeDefaultWorkdir
	case !filepath.IsAbs(wd):
		base := req.SessionCwd
		if base == "" {
			base = fakeDefaultWorkdir
		}
		wd = filepath.Join(base, wd)
	}
	timeout := req.Timeout
	if timeout == 0 {
		timeout = fakeDefaultTimeout
	}
	timeout = min(timeout, fakeMaxTimeout)
	return executor.Spec{Command: req.Command, Workdir: wd, Timeout: timeout, Owner: req.Owner,
		Stdin: req.Stdin, Env: req.Env}, nil
}

func (f *fakeExec) Run(ctx context.Context, spec executor.Spec, observe func(executor.Chunk)) (executor.Result, error) {
	f.mu.Lock()
	f.runs = append(f.runs, spec)
	chunks, res, err, hook := f.chunks, f.result, f.runErr, f.runHook
	f.mu.Unlock()
	if observe != nil {
		for _, c := range chunks {
			observe(c)
		}
	}
	if hook != nil {
		hook(ctx)
	}
	return res, err
}

func (f *fakeExec) Start(spec executor.Spec) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts = append(f.starts, spec)
	return f.startID, f.startErr
}

func (f *fakeExec) Read(id, caller string) (executor.ReadResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads = append(f.reads, [2]string{id, caller})
	return f.readRes, f.readErr
}

func (f *fakeExec) Kill(_ context.Context, id, caller string) (executor.KillResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.kills = append(f.kills, [2]string{id, caller})
	return f.killRes, f.killErr
}

func (f *fakeExec) KillOwned(context.Context, string) {}

func (f *fakeExec) OwnerOf(string) (string, bool) { return "", false }

func (f *fakeExec) OnTaskDone(fn func(executor.TaskDone)) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subs == nil {
		f.subs = map[int]func(executor.TaskDone){}
	}
	id := f.nextSub
	f.nextSub++
	f.subs[id] = fn
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.subs, id)
	}
}

// finish announces a finished task to the subscribers.
func (f *fakeExec) finish(d executor.TaskDone) {
	f.mu.Lock()
	subs := make([]func(executor.TaskDone), 0, len(f.subs))
	for _, fn := range f.subs {
		subs = append(subs, fn)
	}
	f.mu.Unlock()
	for _, fn := range subs {
		fn(d)
	}
}

func (f *fakeExec) Shutdown(context.Context) error { return nil }

func (f *fakeExec) calls() (reqs []executor.Request, runs, starts []executor.Spec) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]executor.Request(nil), f.requests...), append([]executor.Spec(nil), f.runs...),
		append([]executor.Spec(nil), f.starts...)
}
