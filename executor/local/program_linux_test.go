package local

import (
	"bufio"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor/executortest"
)

// newProgramSpawner is a plain spawner without process limits, closed at
// the end of the test.
func newProgramSpawner(t *testing.T) *Spawner {
	t.Helper()
	sp, err := NewSpawner(SpawnerConfig{Limits: Limits{Pids: -1, TotalPids: -1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.Close() })
	return sp
}

// startProgram starts bash -c script as a Program, stopped at the end.
func startProgram(t *testing.T, sp *Spawner, script string) *Program {
	t.Helper()
	p, err := sp.StartProgram("bash", []string{"-c", script}, t.TempDir(), os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		p.Stop(ctx, 0)
	})
	return p
}

func waitDone(t *testing.T, p *Program, within time.Duration) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(within):
		t.Fatalf("the program was not reaped within %v", within)
	}
}

// A program is spoken to over its stdin and stdout; when it exits, its exit
// status and the tail of its stderr are kept.
func TestProgramTalksOverItsPipes(t *testing.T) {
	p := startProgram(t, newProgramSpawner(t), `read l; echo "got $l"; echo "it failed: $l" >&2; exit 4`)
	if _, err := p.Stdin().Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(p.Stdout()).ReadString('\n')
	if err != nil || line != "got hello\n" {
		t.Fatalf("stdout %q, %v", line, err)
	}
	waitDone(t, p, 10*time.Second)
	if exit, ok := p.Exit(); !ok || exit.Code != 4 || exit.Signal != "" {
		t.Errorf("exit %+v %v, want code 4", exit, ok)
	}
	if got := p.Stderr(); got != "it failed: hello\n" {
		t.Errorf("stderr %q", got)
	}
}

// Stop is the commands' kill path: TERM to the whole group, the grace, then
// KILL; a program and its children that ignore TERM are gone after it.
func TestProgramStopKillsTheGroupAfterGrace(t *testing.T) {
	marker := "dshprog-" + strings.ReplaceAll(t.Name(), "/", "-")
	p := startProgram(t, newProgramSpawner(t),
		`trap "" TERM; (exec -a `+marker+`-child sleep 600) & exec -a `+marker+`-leader sleep 600`)
	eventually(t, 5*time.Second, "both processes", func() bool { return len(executortest.Processes(marker)) == 2 })
	const grace = 300 * time.Millisecond
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p.Stop(ctx, grace)
	if took := time.Since(start); took < grace {
		t.Errorf("stopped after %v: TERM was not given its grace (%v)", took, grace)
	}
	if exit, ok := p.Exit(); !ok || exit.Signal != "SIGKILL" {
		t.Errorf("exit %+v %v, want SIGKILL", exit, ok)
	}
	// The child got its KILL with the leader's; under load it may still be
	// on its way out (neither running nor a zombie yet) when Stop returns.
	eventually(t, 5*time.Second, "no process left after Stop", func() bool { return len(executortest.Processes(marker)) == 0 })
}

// When the program exits on its own, what it left running in its group is
// killed before it is reaped, and its stdout ends.
func TestProgramLeftoversDieWithIt(t *testing.T) {
	marker := "dshprog-" + strings.ReplaceAll(t.Name(), "/", "-")
	p := startProgram(t, newProgramSpawner(t), `(exec -a `+marker+` sleep 600) & echo started`)
	waitDone(t, p, 10*time.Second)
	if left := executortest.Processes(marker); len(left) != 0 {
		t.Errorf("leftovers after the program exited: %v", left)
	}
	if exit, _ := p.Exit(); exit.Code != 0 {
		t.Errorf("exit %+v", exit)
	}
}

// A program that cannot be started says why, as os/exec would.
func TestStartProgramErrors(t *testing.T) {
	sp := newProgramSpawner(t)
	var ee *exec.Error
	if _, err := sp.StartProgram("no-such-program-anywhere", nil, "", nil); !errors.As(err, &ee) || !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("a name not in PATH: %v", err)
	}
	var pe *fs.PathError
	if _, err := sp.StartProgram("/nonexistent/program", nil, "", nil); !errors.As(err, &pe) || !errors.Is(err, syscall.ENOENT) {
		t.Errorf("a missing path: %v", err)
	}
}
