package sandbox

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/executortest"
	"github.com/dsh-acp/dsh-acp/executor/local"
)

// testGrace is the TERM→KILL grace of test executors.
const testGrace = 300 * time.Millisecond

// requireBwrap skips (or, under CI=true, fails) when bubblewrap cannot run
// here, printing why.
func requireBwrap(t testing.TB) {
	t.Helper()
	sp, err := NewSpawner(Config{Config: local.Config{StateDir: t.TempDir()}, Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if why := sp.Unavailable(); why != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and bubblewrap is unusable: %v", why)
		}
		t.Skipf("bubblewrap is unusable here: %v", why)
	}
}

// testHome makes a throwaway HOME with a .cache directory.
func testHome(t testing.TB) string {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home")
	if err := os.MkdirAll(filepath.Join(home, ".cache"), 0o755); err != nil {
		t.Fatal(err)
	}
	return home
}

// newTestExecutor returns a sandboxed executor with a private state dir, a
// throwaway HOME (unless cfg names one) and a short grace, shut down when
// the test ends.
func newTestExecutor(t testing.TB, cfg Config) *Executor {
	t.Helper()
	if cfg.StateDir == "" {
		cfg.StateDir = t.TempDir()
	}
	if cfg.Home == "" {
		cfg.Home = testHome(t)
	}
	if cfg.Grace == 0 {
		cfg.Grace = testGrace
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	executortest.ShutDownAtEnd(t, e, 20*time.Second)
	return e
}

// run resolves and runs command at level in cwd.
func run(t testing.TB, e *Executor, level executor.Level, cwd, command string) executor.Result {
	t.Helper()
	spec, err := e.Resolve(executor.Request{Command: command, SessionCwd: cwd, Level: level})
	if err != nil {
		t.Fatal(err)
	}
	return executortest.MustRun(t, e, spec)
}
