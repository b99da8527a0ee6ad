package local

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/engine"
)

// startGuarded starts `grep NoNewPrivs /proc/self/status` and returns its
// output.
func startGuarded(t *testing.T, s *Spawner, guarded bool) (string, error) {
	t.Helper()
	l, err := s.Prepare(engine.Command{Spec: executor.Spec{Command: "grep NoNewPrivs /proc/self/status", Workdir: t.TempDir(), Level: executor.LevelOff}})
	if err != nil {
		t.Fatal(err)
	}
	l.Guarded = guarded
	p, err := s.Start(l)
	if err != nil {
		return "", err
	}
	out := make([]byte, 256)
	n, _ := p.Stdout().Read(out)
	p.Wait()
	p.Release()
	return strings.TrimSpace(string(out[:n])), nil
}

// TestGuardThread: what Guard sets on the guard thread (here no_new_privs)
// reaches the processes started guarded and no other; without a Guard, or
// when it failed, a guarded start fails.
func TestGuardThread(t *testing.T) {
	s, err := NewSpawner(SpawnerConfig{Guard: func() error { return unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		guarded bool
		want    string
	}{{false, "NoNewPrivs:\t0"}, {true, "NoNewPrivs:\t1"}, {false, "NoNewPrivs:\t0"}} {
		got, err := startGuarded(t, s, c.guarded)
		if err != nil || got != c.want {
			t.Errorf("guarded %v: got %q, %v; want %q", c.guarded, got, err, c.want)
		}
	}
	plain, err := NewSpawner(SpawnerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := startGuarded(t, plain, true); !errors.Is(err, errNoGuard) {
		t.Errorf("a guarded start without a Guard: %v", err)
	}
	boom := errors.New("boom")
	failing, err := NewSpawner(SpawnerConfig{Guard: func() error { return boom }})
	if err != nil {
		t.Fatal(err)
	}
	defer failing.Close()
	if _, err := startGuarded(t, failing, true); !errors.Is(err, boom) {
		t.Errorf("a guarded start after the Guard failed: %v", err)
	}
}
