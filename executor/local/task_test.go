package local

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
)

// startTask starts command in the background for owner.
func startTask(t *testing.T, e *Executor, owner, command string) string {
	t.Helper()
	spec := resolve(t, e, command)
	spec.Owner = owner
	id, err := e.Start(spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return id
}

// doneWatcher collects task completions, in whatever order they come.
type doneWatcher struct {
	ch   chan executor.TaskDone
	seen map[string]executor.TaskDone
}

func watchDone(t *testing.T, e *Executor) *doneWatcher {
	w := &doneWatcher{ch: make(chan executor.TaskDone, 64), seen: map[string]executor.TaskDone{}}
	t.Cleanup(e.OnTaskDone(func(d executor.TaskDone) { w.ch <- d }))
	return w
}

// wait returns id's completion. Call it from the test goroutine only.
func (w *doneWatcher) wait(t *testing.T, id string) executor.TaskDone {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		if d, ok := w.seen[id]; ok {
			return d
		}
		select {
		case d := <-w.ch:
			w.seen[d.ID] = d
		case <-timeout:
			t.Fatalf("no completion for %s", id)
		}
	}
}

// mkfifo makes a named pipe the test writes to and a task reads from.
func mkfifo(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTaskIncrementalReads(t *testing.T) {
	e := newTestExecutor(t, Config{})
	fifo := mkfifo(t)
	id := startTask(t, e, "s1", "echo start; cat "+fifo+"; echo end; exit 5")
	if id != "bash-1" {
		t.Errorf("first id %q", id)
	}
	readUntil := func(want string) executor.ReadResult {
		t.Helper()
		var got bytes.Buffer
		var last executor.ReadResult
		eventually(t, 20*time.Second, "output "+want, func() bool {
			r, err := e.Read(id, "s1")
			if err != nil {
				t.Fatal(err)
			}
			got.Write(r.Output)
			last = r
			return got.String() == want && (want != "end\n" || r.Status != executor.Running)
		})
		if got.String() != want {
			t.Fatalf("read %q, want %q", got.String(), want)
		}
		return last
	}
	readUntil("start\n")
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.WriteString("one\n")
	readUntil("one\n")
	w.WriteString("two\n")
	readUntil("two\n")
	if r, _ := e.Read(id, "s1"); len(r.Output) != 0 || r.Status != executor.Running {
		t.Errorf("idle read: %q %v", r.Output, r.Status)
	}
	w.Close()
	r := readUntil("end\n")
	if r.Status != executor.Completed || r.ExitCode != 5 || r.Signal != "" || r.Lost != 0 {
		t.Errorf("final read %+v", r)
	}
	if r, _ := e.Read(id, "s1"); len(r.Output) != 0 || r.Status != executor.Completed {
		t.Errorf("read after the end: %+v", r)
	}
}

func TestTaskOutputUnreadAtExit(t *testing.T) {
	e := newTestExecutor(t, Config{})
	events := watchDone(t, e)
	id := startTask(t, e, "", "echo done-output")
	d := events.wait(t, id)
	if d.Status != executor.Completed || d.ExitCode != 0 || d.Command != "echo done-output" {
		t.Errorf("done %+v", d)
	}
	r, err := e.Read(id, "anyone")
	if err != nil || string(r.Output) != "done-output\n" || r.Status != executor.Completed {
		t.Errorf("read %+v %v", r, err)
	}
}

// Exit detection must not depend on output: a grandchild keeps the pipe
// open, the task still completes (and the grandchild dies with the group).
func TestTaskExitIndependentOfOutput(t *testing.T) {
	e := newTestExecutor(t, Config{})
	events := watchDone(t, e)
	id := startTask(t, e, "", "echo $$; sleep 100 & exit 3")
	d := events.wait(t, id)
	if d.Status != executor.Completed || d.ExitCode != 3 {
		t.Errorf("done %+v", d)
	}
	r, _ := e.Read(id, "")
	requireNoSurvivors(t, firstLinePID(t, r.Output))
}

func TestTaskLostOutput(t *testing.T) {
	e := newTestExecutor(t, Config{CaptureBytes: 4096})
	events := watchDone(t, e)
	id := startTask(t, e, "s1", "seq 1 30000")
	events.wait(t, id)
	r, err := e.Read(id, "s1")
	if err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile(r.SpillPath)
	if err != nil {
		t.Fatalf("spill %q: %v", r.SpillPath, err)
	}
	if len(r.Output) != 4096 || r.Lost != int64(len(full))-4096 || !bytes.HasSuffix(full, r.Output) {
		t.Errorf("output %d lost %d spill %d", len(r.Output), r.Lost, len(full))
	}
	if lines := strings.Count(string(full), "\n"); lines != 30000 {
		t.Errorf("spill has %d lines", lines)
	}
	// Nothing new: nothing lost; the complete file is still named.
	if r2, _ := e.Read(id, "s1"); r2.Lost != 0 || len(r2.Output) != 0 || r2.SpillPath != r.SpillPath {
		t.Errorf("second read %+v", r2)
	}
}

func TestTaskOwnership(t *testing.T) {
	e := newTestExecutor(t, Config{})
	owned := startTask(t, e, "alice", "sleep 600")
	open := startTask(t, e, "", "sleep 600")
	defer e.KillOwned(context.Background(), "alice")
	defer e.KillOwned(context.Background(), "")

	for _, caller := range []string{"bob", ""} {
		_, err := e.Read(owned, caller)
		var oe *executor.OwnerError
		if !errors.As(err, &oe) || !errors.Is(err, executor.ErrNotOwner) || err.Error() != "task "+owned+" belongs to another session" {
			t.Errorf("Read by %q: %v", caller, err)
		}
		if _, err := e.Kill(context.Background(), owned, caller); !errors.As(err, &oe) {
			t.Errorf("Kill by %q: %v", caller, err)
		}
	}
	if _, err := e.Read(owned, "alice"); err != nil {
		t.Errorf("owner's read: %v", err)
	}
	for _, caller := range []string{"bob", ""} {
		if _, err := e.Read(open, caller); err != nil {
			t.Errorf("unowned task read by %q: %v", caller, err)
		}
	}
	var ue *executor.UnknownTaskError
	if _, err := e.Read("bash-99", "alice"); !errors.As(err, &ue) || !errors.Is(err, executor.ErrUnknownTask) || ue.ID != "bash-99" {
		t.Errorf("unknown id: %v", err)
	}
	if _, err := e.Kill(context.Background(), "bash-99", "alice"); !errors.Is(err, executor.ErrUnknownTask) {
		t.Errorf("kill unknown id: %v", err)
	}
	if o, ok := e.OwnerOf(owned); o != "alice" || !ok {
		t.Errorf("OwnerOf = %q %v", o, ok)
	}
	if _, ok := e.OwnerOf("bash-99"); ok {
		t.Error("OwnerOf unknown id: ok")
	}
	if _, err := e.Kill(context.Background(), owned, "alice"); err != nil {
		t.Fatal(err)
	}
	if o, _ := e.OwnerOf(owned); o != "alice" {
		t.Errorf("owner after the end: %q", o)
	}
	if _, err := e.Read(owned, "bob"); !errors.Is(err, executor.ErrNotOwner) {
		t.Errorf("finished task read by another: %v", err)
	}
}

func TestTaskKill(t *testing.T) {
	const grace = 300 * time.Millisecond
	e := newTestExecutor(t, Config{Grace: grace})
	events := watchDone(t, e)
	id := startTask(t, e, "s", "trap '' TERM; sleep 600 & echo $$; wait")
	var pid int
	eventually(t, 10*time.Second, "the task's pid", func() bool {
		r, _ := e.Read(id, "s")
		if len(r.Output) > 0 {
			pid = firstLinePID(t, r.Output)
		}
		return pid != 0
	})
	start := time.Now()
	kr, err := e.Kill(context.Background(), id, "s")
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > grace+time.Second {
		t.Errorf("kill took %v", took)
	}
	if kr.AlreadyFinished || kr.Status != executor.Killed || kr.Signal != "SIGKILL" || kr.ExitCode != -1 {
		t.Errorf("kill result %+v", kr)
	}
	requireNoSurvivors(t, pid)
	if d := events.wait(t, id); d.Status != executor.Killed {
		t.Errorf("done %+v", d)
	}
	kr, err = e.Kill(context.Background(), id, "s")
	if err != nil || !kr.AlreadyFinished || kr.Status != executor.Killed {
		t.Errorf("second kill %+v %v", kr, err)
	}
	if r, _ := e.Read(id, "s"); r.Status != executor.Killed || r.Signal != "SIGKILL" {
		t.Errorf("read after kill %+v", r)
	}

	done := startTask(t, e, "s", "exit 2")
	events.wait(t, done)
	kr, err = e.Kill(context.Background(), done, "s")
	if err != nil || !kr.AlreadyFinished || kr.Status != executor.Completed || kr.ExitCode != 2 {
		t.Errorf("kill of a finished task %+v %v", kr, err)
	}
}

func TestTaskDoneOncePerTask(t *testing.T) {
	e := newTestExecutor(t, Config{})
	var mu sync.Mutex
	seen := map[string]int{}
	all := make(chan struct{})
	unsubscribe := e.OnTaskDone(func(d executor.TaskDone) {
		mu.Lock()
		defer mu.Unlock()
		seen[d.ID]++
		if len(seen) == 3 {
			close(all)
		}
	})
	late := watchDone(t, e)
	var ids []string
	for _, cmd := range []string{"true", "exit 1", "sleep 600"} {
		ids = append(ids, startTask(t, e, "o", cmd))
	}
	late.wait(t, ids[0])
	late.wait(t, ids[1])
	if _, err := e.Kill(context.Background(), ids[2], "o"); err != nil {
		t.Fatal(err)
	}
	<-all
	unsubscribe()
	last := startTask(t, e, "o", "true")
	late.wait(t, last)
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("%s notified %d times", id, seen[id])
		}
	}
	if seen[last] != 0 {
		t.Error("notified after unsubscribe")
	}
}

func TestKillOwned(t *testing.T) {
	e := newTestExecutor(t, Config{})
	a1 := startTask(t, e, "a", "sleep 600")
	a2 := startTask(t, e, "a", "trap '' TERM; sleep 600")
	b := startTask(t, e, "b", "sleep 600")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e.KillOwned(ctx, "a")
	for _, id := range []string{a1, a2} {
		if r, _ := e.Read(id, "a"); r.Status != executor.Killed {
			t.Errorf("%s: %v", id, r.Status)
		}
	}
	if r, _ := e.Read(b, "b"); r.Status != executor.Running {
		t.Errorf("other owner's task: %v", r.Status)
	}
	if kr, _ := e.Kill(ctx, b, "b"); kr.Status != executor.Killed {
		t.Errorf("kill b: %+v", kr)
	}
}

func TestShutdown(t *testing.T) {
	e, err := New(Config{StateDir: t.TempDir(), Grace: testGrace})
	if err != nil {
		t.Fatal(err)
	}
	id := startTaskNoCleanup(t, e, "trap '' TERM; sleep 600 & echo $$; wait")
	ran := make(chan executor.Result)
	fg := resolve(t, e, "trap '' TERM; echo $$; sleep 600")
	fg.Timeout = 10 * time.Minute
	fgReady := make(chan struct{})
	var once sync.Once
	go func() {
		res, err := e.Run(context.Background(), fg, func(executor.Chunk) { once.Do(func() { close(fgReady) }) })
		if err != nil {
			t.Error(err)
		}
		ran <- res
	}()
	var taskPID int
	eventually(t, 10*time.Second, "the task's pid", func() bool {
		r, _ := e.Read(id, "")
		if len(r.Output) > 0 {
			taskPID = firstLinePID(t, r.Output)
		}
		return taskPID != 0
	})
	<-fgReady
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > testGrace+2*time.Second {
		t.Errorf("shutdown took %v", took)
	}
	res := <-ran
	if res.Signal != "SIGKILL" {
		t.Errorf("foreground result %+v", res)
	}
	requireNoSurvivors(t, taskPID)
	requireNoSurvivors(t, firstLinePID(t, res.Stdout))
	if r, _ := e.Read(id, ""); r.Status != executor.Killed {
		t.Errorf("task after shutdown: %v", r.Status)
	}
	if _, err := e.Run(context.Background(), fg, nil); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("Run after Shutdown: %v", err)
	}
	if _, err := e.Start(fg); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("Start after Shutdown: %v", err)
	}
}

func startTaskNoCleanup(t *testing.T, e *Executor, command string) string {
	t.Helper()
	id, err := e.Start(resolve(t, e, command))
	if err != nil {
		t.Fatal(err)
	}
	return id
}
