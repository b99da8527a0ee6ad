package executorfake_test

import (
	"context"
	"errors"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/executorfake"
)

func TestResolve(t *testing.T) {
	f := executorfake.New()
	tests := []struct {
		req  executor.Request
		dir  string
		want executor.Level
	}{
		{req: executor.Request{SessionCwd: "/s"}, dir: "/s", want: executor.LevelWorkspace},
		{req: executor.Request{SessionCwd: "/s", Workdir: "a/../b"}, dir: "/s/b", want: executor.LevelWorkspace},
		{req: executor.Request{Workdir: "x", Level: executor.LevelOff}, dir: executorfake.DefaultWorkdir + "/x", want: executor.LevelOff},
	}
	for _, tc := range tests {
		spec, err := f.Resolve(tc.req)
		if err != nil || spec.Workdir != tc.dir || spec.Level != tc.want || spec.Timeout != executorfake.DefaultTimeout {
			t.Errorf("Resolve(%+v) = %+v, %v", tc.req, spec, err)
		}
	}
	if _, err := f.Resolve(executor.Request{Level: "bogus"}); err == nil {
		t.Error("unknown level accepted")
	}
	if n := len(f.Calls().Requests); n != 4 {
		t.Errorf("%d requests recorded", n)
	}
}

func TestRunScripted(t *testing.T) {
	f := executorfake.New()
	f.Chunks = []executor.Chunk{{Stream: executor.Stdout, Data: []byte("a")}, {Stream: executor.Stderr, Data: []byte("b")}}
	f.Result = executor.Result{ExitCode: 3}
	var seen string
	res, err := f.Run(context.Background(), executor.Spec{Command: "x"}, func(c executor.Chunk) { seen += string(c.Data) })
	if err != nil || res.ExitCode != 3 || seen != "ab" {
		t.Errorf("Run = %+v, %v; observed %q", res, err, seen)
	}
	f.LevelsOffered, f.Why = []executor.Level{executor.LevelOff}, errors.Join(executor.ErrSandbox, errors.New("no bwrap"))
	if _, err := f.Run(context.Background(), executor.Spec{Level: executor.LevelWorkspace}, nil); !errors.Is(err, executor.ErrSandbox) {
		t.Errorf("level not offered: %v", err)
	}
	if _, err := f.Start(executor.Spec{Level: executor.LevelReadOnly}); !errors.Is(err, executor.ErrSandbox) {
		t.Errorf("Start at a level not offered: %v", err)
	}
}

func TestTasks(t *testing.T) {
	f := executorfake.New()
	var done []executor.TaskDone
	unsubscribe := f.OnTaskDone(func(d executor.TaskDone) { done = append(done, d) })
	id, _ := f.Start(executor.Spec{Command: "c", Owner: "alice"})
	other, _ := f.Start(executor.Spec{Command: "d", Owner: "alice"})
	if id != "bash-1" || other != "bash-2" {
		t.Fatalf("ids %q %q", id, other)
	}
	f.Write(id, "one\n")
	if r, err := f.Read(id, "alice"); err != nil || string(r.Output) != "one\n" || r.Status != executor.Running {
		t.Errorf("read %+v %v", r, err)
	}
	f.Write(id, "two\n")
	if r, _ := f.Read(id, "alice"); string(r.Output) != "two\n" {
		t.Errorf("second read %q: not incremental", r.Output)
	}
	var oe *executor.OwnerError
	if _, err := f.Read(id, "bob"); !errors.As(err, &oe) || err.Error() != "task bash-1 belongs to another session" {
		t.Errorf("read by another: %v", err)
	}
	if _, err := f.Kill(context.Background(), "bash-9", "alice"); !errors.Is(err, executor.ErrUnknownTask) {
		t.Errorf("kill unknown: %v", err)
	}
	f.Finish(id, 4, "")
	kr, err := f.Kill(context.Background(), id, "alice")
	if err != nil || !kr.AlreadyFinished || kr.Status != executor.Completed || kr.ExitCode != 4 {
		t.Errorf("kill of a finished task %+v %v", kr, err)
	}
	f.KillOwned(context.Background(), "alice")
	if r, _ := f.Read(other, "alice"); r.Status != executor.Killed || r.Signal != "SIGKILL" {
		t.Errorf("after KillOwned %+v", r)
	}
	if len(done) != 2 || done[0].ID != id || done[0].ExitCode != 4 || done[1].Status != executor.Killed {
		t.Errorf("notices %+v", done)
	}
	unsubscribe()
	third, _ := f.Start(executor.Spec{})
	f.Finish(third, 0, "")
	if len(done) != 2 {
		t.Error("notified after unsubscribe")
	}
	if o, ok := f.OwnerOf(id); o != "alice" || !ok {
		t.Errorf("OwnerOf %q %v", o, ok)
	}
	_ = f.Shutdown(context.Background())
	if _, err := f.Start(executor.Spec{}); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("Start after Shutdown: %v", err)
	}
	c := f.Calls()
	if len(c.Starts) != 4 || len(c.Reads) != 4 || len(c.Kills) != 2 || c.Shutdowns != 1 {
		t.Errorf("calls %+v", c)
	}
}
