package executortest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/executor"
)

func mkfifo(path string) error { return unix.Mkfifo(path, 0o600) }

func testTaskIncrementalReads(t *testing.T, h *harness) {
	fifo := h.mkfifo()
	id := h.start("s1", "echo start; cat "+fifo+"; echo end; exit 5")
	if id != "bash-1" {
		t.Errorf("first id %q, want bash-1", id)
	}
	expect := func(want string, final bool) executor.ReadResult {
		t.Helper()
		got, r := h.readUntil(id, "s1", want, final)
		if got != want {
			t.Fatalf("read %q, want exactly %q (only the output since the last read)", got, want)
		}
		return r
	}
	expect("start\n", false)
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.WriteString("one\n")
	expect("one\n", false)
	w.WriteString("two\n")
	expect("two\n", false)
	if r, _ := h.e.Read(id, "s1"); len(r.Output) != 0 || r.Status != executor.Running {
		t.Errorf("idle read: %q %v", r.Output, r.Status)
	}
	w.Close()
	r := expect("end\n", true)
	if r.Status != executor.Completed || r.ExitCode != 5 || r.Signal != "" || r.Lost != 0 {
		t.Errorf("final read %+v", r)
	}
	if r, _ := h.e.Read(id, "s1"); len(r.Output) != 0 || r.Status != executor.Completed {
		t.Errorf("read after the end: %+v", r)
	}
}

func testTaskOutputUnreadAtExit(t *testing.T, h *harness) {
	events := h.watchDone()
	id := h.start("", "echo done-output")
	d := events.wait(t, id)
	if d.Status != executor.Completed || d.ExitCode != 0 || d.Command != "echo done-output" || d.ID != id {
		t.Errorf("done %+v", d)
	}
	r, err := h.e.Read(id, "anyone")
	if err != nil || string(r.Output) != "done-output\n" || r.Status != executor.Completed {
		t.Errorf("read %+v %v", r, err)
	}
}

// Exit detection must not depend on output: a job keeps the pipe open, the
// task still completes, and the job dies with the group.
func testTaskExitIndependentOfOutput(t *testing.T, h *harness) {
	events := h.watchDone()
	m := marker()
	id := h.start("", "sleep "+m+" & exit 3")
	d := events.wait(t, id)
	if d.Status != executor.Completed || d.ExitCode != 3 {
		t.Errorf("done %+v", d)
	}
	h.requireGone("a task's job after the task exited", m)
}

func testTaskOwnership(t *testing.T, h *harness) {
	owned := h.start("alice", "sleep "+marker())
	open := h.start("", "sleep "+marker())
	for _, caller := range []string{"bob", ""} {
		_, err := h.e.Read(owned, caller)
		var oe *executor.OwnerError
		if !errors.As(err, &oe) || !errors.Is(err, executor.ErrNotOwner) || err.Error() != "task "+owned+" belongs to another session" {
			t.Errorf("Read by %q: %v", caller, err)
		}
		if _, err := h.e.Kill(context.Background(), owned, caller); !errors.As(err, &oe) {
			t.Errorf("Kill by %q: %v", caller, err)
		}
	}
	if _, err := h.e.Read(owned, "alice"); err != nil {
		t.Errorf("owner's read: %v", err)
	}
	for _, caller := range []string{"bob", ""} {
		if _, err := h.e.Read(open, caller); err != nil {
			t.Errorf("unowned task read by %q: %v", caller, err)
		}
	}
	var ue *executor.UnknownTaskError
	if _, err := h.e.Read("bash-99", "alice"); !errors.As(err, &ue) || !errors.Is(err, executor.ErrUnknownTask) || ue.ID != "bash-99" {
		t.Errorf("unknown id: %v", err)
	}
	if _, err := h.e.Kill(context.Background(), "bash-99", "alice"); !errors.Is(err, executor.ErrUnknownTask) {
		t.Errorf("kill unknown id: %v", err)
	}
	if o, ok := h.e.OwnerOf(owned); o != "alice" || !ok {
		t.Errorf("OwnerOf = %q %v", o, ok)
	}
	if _, ok := h.e.OwnerOf("bash-99"); ok {
		t.Error("OwnerOf unknown id: ok")
	}
	if _, err := h.e.Kill(context.Background(), owned, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Kill(context.Background(), open, ""); err != nil {
		t.Fatal(err)
	}
	if o, _ := h.e.OwnerOf(owned); o != "alice" {
		t.Errorf("owner after the end: %q", o)
	}
	if _, err := h.e.Read(owned, "bob"); !errors.Is(err, executor.ErrNotOwner) {
		t.Errorf("finished task read by another: %v", err)
	}
}

func testTaskKill(t *testing.T, h *harness) {
	events := h.watchDone()
	m, escaped := marker(), marker()
	id := h.start("s", fmt.Sprintf("trap '' TERM; (setsid sleep %s &); nohup sleep %s >/dev/null 2>&1 & echo ready; wait", escaped, m))
	h.readUntil(id, "s", "ready", false)
	h.requireAlive("the task's job", m)
	kr, err := h.e.Kill(context.Background(), id, "s")
	if err != nil {
		t.Fatal(err)
	}
	if kr.AlreadyFinished || kr.Status != executor.Killed || kr.Signal != "SIGKILL" || kr.ExitCode != -1 {
		t.Errorf("kill result %+v", kr)
	}
	h.requireGone("a killed task's job", m)
	if h.confined {
		h.requireGone("a killed task's setsid'd job at a confined level", escaped)
	} else {
		t.Cleanup(func() { h.opts.Kill(escaped) })
	}
	if d := events.wait(t, id); d.Status != executor.Killed || d.Signal != "SIGKILL" {
		t.Errorf("done %+v", d)
	}
	kr, err = h.e.Kill(context.Background(), id, "s")
	if err != nil || !kr.AlreadyFinished || kr.Status != executor.Killed {
		t.Errorf("second kill %+v %v", kr, err)
	}
	if r, _ := h.e.Read(id, "s"); r.Status != executor.Killed || r.Signal != "SIGKILL" {
		t.Errorf("read after kill %+v", r)
	}

	done := h.start("s", "exit 2")
	events.wait(t, done)
	kr, err = h.e.Kill(context.Background(), done, "s")
	if err != nil || !kr.AlreadyFinished || kr.Status != executor.Completed || kr.ExitCode != 2 {
		t.Errorf("kill of a finished task %+v %v", kr, err)
	}
}

func testTaskDoneOncePerTask(t *testing.T, h *harness) {
	var mu sync.Mutex
	seen := map[string]int{}
	all := make(chan struct{})
	unsubscribe := h.e.OnTaskDone(func(d executor.TaskDone) {
		mu.Lock()
		defer mu.Unlock()
		seen[d.ID]++
		if len(seen) == 3 {
			close(all)
		}
	})
	late := h.watchDone()
	var ids []string
	for _, cmd := range []string{"true", "exit 1", "sleep " + marker()} {
		ids = append(ids, h.start("o", cmd))
	}
	late.wait(t, ids[0])
	late.wait(t, ids[1])
	if _, err := h.e.Kill(context.Background(), ids[2], "o"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-all:
	case <-time.After(20 * time.Second):
		t.Fatal("not every task was notified")
	}
	unsubscribe()
	last := h.start("o", "true")
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
	if n := len(late.seen[ids[0]]); n != 1 {
		t.Errorf("late watcher saw %s %d times", ids[0], n)
	}
}

func testKillOwned(t *testing.T, h *harness) {
	ma, mb, escaped := marker(), marker(), marker()
	a1 := h.start("a", "sleep "+ma)
	a2 := h.start("a", fmt.Sprintf("trap '' TERM; (setsid sleep %s &); sleep %s", escaped, ma))
	b := h.start("b", "sleep "+mb)
	h.requireAlive("the tasks", ma)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h.e.KillOwned(ctx, "a")
	for _, id := range []string{a1, a2} {
		if r, _ := h.e.Read(id, "a"); r.Status != executor.Killed {
			t.Errorf("%s: %v after KillOwned", id, r.Status)
		}
	}
	h.requireGone("tasks after KillOwned", ma)
	if h.confined {
		h.requireGone("a setsid'd job after KillOwned at a confined level", escaped)
	} else {
		t.Cleanup(func() { h.opts.Kill(escaped) })
	}
	if r, _ := h.e.Read(b, "b"); r.Status != executor.Running {
		t.Errorf("other owner's task: %v", r.Status)
	}
	if kr, _ := h.e.Kill(ctx, b, "b"); kr.Status != executor.Killed {
		t.Errorf("kill b: %+v", kr)
	}
}

// testNeverBlock: Read, OwnerOf and Kill of one task answer promptly while
// another command (foreground, ignoring TERM) holds on.
func testNeverBlock(t *testing.T, h *harness) {
	m := marker()
	fg := h.resolve("trap '' TERM; echo ready; sleep " + m)
	fg.Timeout = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	var once sync.Once
	ran := make(chan error, 1)
	go func() {
		_, err := h.e.Run(ctx, fg, func(executor.Chunk) { once.Do(func() { close(ready) }) })
		ran <- err
	}()
	<-ready
	bg := h.start("s", "trap '' TERM; echo ready; sleep "+marker())
	h.readUntil(bg, "s", "ready", false)
	for range 20 {
		start := time.Now()
		if _, err := h.e.Read(bg, "s"); err != nil {
			t.Fatal(err)
		}
		h.e.OwnerOf(bg)
		if took := time.Since(start); took > time.Second {
			t.Fatalf("Read and OwnerOf took %v behind running commands", took)
		}
	}
	start := time.Now()
	kr, err := h.e.Kill(context.Background(), bg, "s")
	if err != nil || kr.Status != executor.Killed {
		t.Errorf("kill %+v %v", kr, err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Kill took %v", took)
	}
	cancel()
	if err := <-ran; err != nil {
		t.Error(err)
	}
	h.requireGone("the foreground command after cancel", m)
}

func testShutdown(t *testing.T, h *harness) {
	mt, mf, escaped := marker(), marker(), marker()
	id := h.start("", fmt.Sprintf("trap '' TERM; (setsid sleep %s &); sleep %s & echo ready; wait", escaped, mt))
	fg := h.resolve("trap '' TERM; echo ready; sleep " + mf)
	fg.Timeout = 10 * time.Minute
	ready := make(chan struct{})
	var once sync.Once
	ran := make(chan executor.Result, 1)
	go func() {
		res, err := h.e.Run(context.Background(), fg, func(executor.Chunk) { once.Do(func() { close(ready) }) })
		if err != nil {
			t.Error(err)
		}
		ran <- res
	}()
	h.readUntil(id, "", "ready", false)
	<-ready
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	if err := h.e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("shutdown took %v", took)
	}
	if res := <-ran; res.Signal != "SIGKILL" {
		t.Errorf("foreground result %+v", res)
	}
	h.requireGone("the task after Shutdown", mt)
	h.requireGone("the foreground command after Shutdown", mf)
	if h.confined {
		h.requireGone("a setsid'd job after Shutdown at a confined level", escaped)
	} else {
		t.Cleanup(func() { h.opts.Kill(escaped) })
	}
	if r, _ := h.e.Read(id, ""); r.Status != executor.Killed {
		t.Errorf("task after shutdown: %v", r.Status)
	}
	if _, err := h.e.Run(context.Background(), fg, nil); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("Run after Shutdown: %v", err)
	}
	if _, err := h.e.Start(fg); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("Start after Shutdown: %v", err)
	}
}
