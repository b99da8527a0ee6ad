package local

import (
	"bytes"
	"os"
	"strings"
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
