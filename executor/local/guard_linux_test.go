package local

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/engine"
)

// startFrom starts `grep NoNewPrivs /proc/self/status; nice` from guard
// g (nil: the spawn thread) and returns its output.
func startFrom(t *testing.T, s *Spawner, g *Guard) (string, error) {
	t.Helper()
	l, err := s.Prepare(engine.Command{Spec: executor.Spec{Command: "grep NoNewPrivs /proc/self/status; nice", Workdir: t.TempDir(), Level: executor.LevelOff}})
	if err != nil {
		t.Fatal(err)
	}
	l.Guard = g
	p, err := s.Start(l)
	if err != nil {
		return "", err
	}
	out, _ := io.ReadAll(p.Stdout())
	p.Wait()
	p.Release()
	return strings.Join(strings.Fields(string(out)), " "), nil
}

// TestGuardThreads: what each Guard's setup sets on its thread (here
// no_new_privs on one, on the other the highest niceness, 19, which any
// thread may take: both per-thread and inherited) reaches the processes
// started from it and no other; a start from a Guard the Spawner was not
// given, or whose setup failed, fails.
func TestGuardThreads(t *testing.T) {
	nnp := NewGuard(func() error { return unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) })
	nice := NewGuard(func() error { return unix.Setpriority(unix.PRIO_PROCESS, 0, 19) }) // 0: this thread
	s, err := NewSpawner(SpawnerConfig{Guards: []*Guard{nnp, nice}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	plain, err := startFrom(t, s, nil)
	if err != nil || !strings.HasPrefix(plain, "NoNewPrivs: 0 ") {
		t.Fatalf("spawn thread: got %q, %v", plain, err)
	}
	base := strings.TrimPrefix(plain, "NoNewPrivs: 0 ")
	for _, c := range []struct {
		name string
		g    *Guard
		want string
	}{{"no_new_privs", nnp, "NoNewPrivs: 1 " + base}, {"nice", nice, "NoNewPrivs: 0 19"}, {"plain", nil, plain}, {"no_new_privs again", nnp, "NoNewPrivs: 1 " + base}} {
		if got, err := startFrom(t, s, c.g); err != nil || got != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	other, err := NewSpawner(SpawnerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := startFrom(t, other, nnp); !errors.Is(err, errNoGuard) {
		t.Errorf("a start from a guard the spawner was not given: %v", err)
	}
	boom := errors.New("boom")
	failing, err := NewSpawner(SpawnerConfig{Guards: []*Guard{NewGuard(func() error { return boom })}})
	if err != nil {
		t.Fatal(err)
	}
	defer failing.Close()
	if _, err := startFrom(t, failing, failing.guards[0]); !errors.Is(err, boom) {
		t.Errorf("a guarded start after the setup failed: %v", err)
	}
}

// TestGuardedStartsAreLimited: a command started from a guard thread is
// born in a command cgroup of its own, under the per-command pids limit
// (a command of 8 children under a limit of 4 reports the hit), and the
// guard thread does not stay in it: once the command is reaped its cgroup
// is empty, so it goes back for reuse, and the next guarded command runs
// without a hit.
func TestGuardedStartsAreLimited(t *testing.T) {
	limits := Limits{Pids: 4, TotalPids: 64}
	requireLimits(t, limits)
	g := NewGuard(func() error { return nil })
	s, err := NewSpawner(SpawnerConfig{Limits: limits, Guards: []*Guard{g}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run := func(command string) (string, *Process, engine.Exit) {
		t.Helper()
		l, err := s.Prepare(engine.Command{Spec: executor.Spec{Command: command, Workdir: t.TempDir(), Level: executor.LevelOff}})
		if err != nil {
			t.Fatal(err)
		}
		l.Guard = g
		p, err := s.Start(l)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(p.Stdout())
		p.Wait()
		return string(out), p, p.Release()
	}
	for i := range 3 {
		out, p, exit := run("grep pids /proc/self/cgroup; for i in 1 2 3 4 5 6 7 8; do sleep 0.1 & done 2>/dev/null; wait")
		if !strings.Contains(out, "/dsh-acp-") || p.cg == nil {
			t.Fatalf("start %d: the guarded command is not in a command cgroup: %q", i, out)
		}
		if exit.LimitHit != "pids" {
			t.Errorf("start %d: 8 children under a limit of 4 from a guard: LimitHit %q", i, exit.LimitHit)
		}
		deadline := time.Now().Add(5 * time.Second)
		for !p.cg.empty() {
			if time.Now().After(deadline) {
				b, _ := os.ReadFile(filepath.Join(p.cg.dir, "tasks"))
				t.Fatalf("start %d: the command's cgroup still holds %q after it was reaped", i, b)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if out, _, exit := run("true"); exit.LimitHit != "" || out != "" {
			t.Errorf("after start %d: a quiet guarded command reports %q, %q", i, exit.LimitHit, out)
		}
	}
}
