package changes

import (
	"context"
	"os/exec"
	"testing"
)

// A background task's changes, including those made while other commands
// ran their Begin, are emitted when it ends, as its own; a foreground
// command between keeps its own.
func TestBackgroundTask(t *testing.T) {
	f := newFixture(t)
	f.write("log.txt", "start\n")
	ctx := context.Background()
	if err := f.tr.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	f.tr.StartTask("bash-1", "call-bg")
	// the task writes, then a foreground command runs
	bg := exec.Command("bash", "-c", "echo more >> log.txt")
	bg.Dir = f.dir
	if err := bg.Run(); err != nil {
		t.Fatal(err)
	}
	fg, _ := f.run("call-fg", "echo fg > fg.txt")
	if got := summary(fg); got != "created fg.txt" {
		t.Errorf("foreground: %q", got)
	}
	f.tr.TaskDone("bash-1")
	evs := f.sink.all()
	last := evs[len(evs)-1]
	if last.ID != "changes-call-bg" || last.Task != "bash-1" || summary(last) != "modified log.txt" {
		t.Fatalf("background event %+v", last)
	}
	if f.text(last.Files[0].New) != "start\nmore\n" {
		t.Errorf("new text %q", f.text(last.Files[0].New))
	}
}

// A task that ends before StartTask is reported once StartTask comes.
func TestBackgroundTaskDoneEarly(t *testing.T) {
	f := newFixture(t)
	if err := f.tr.Begin(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.write("x.txt", "x\n")
	f.tr.TaskDone("bash-2")
	f.tr.StartTask("bash-2", "call-2")
	evs := f.sink.all()
	if len(evs) != 1 || evs[0].Task != "bash-2" || summary(evs[0]) != "created x.txt" {
		t.Fatalf("events %+v", evs)
	}
}
