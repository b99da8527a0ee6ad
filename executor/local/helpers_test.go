package local

import (
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/executortest"
	evt "github.com/dsh-acp/dsh-acp/internal/eventually"
)

// testGrace is the TERM→KILL grace used by tests that do not care about it.
const testGrace = 300 * time.Millisecond

// newTestExecutor returns an Executor with a private StateDir and a short
// grace, shut down when the test ends.
func newTestExecutor(t *testing.T, cfg Config) *Executor {
	t.Helper()
	if cfg.StateDir == "" {
		cfg.StateDir = t.TempDir()
	}
	if cfg.Grace == 0 {
		cfg.Grace = testGrace
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	executortest.ShutDownAtEnd(t, e, 10*time.Second)
	return e
}

// resolve builds a Spec for command in a fresh temporary workdir.
func resolve(t *testing.T, e *Executor, command string) executor.Spec {
	t.Helper()
	return executortest.MustResolve(t, e, command)
}

// run runs command in the foreground and fails the test on an error.
func run(t *testing.T, e *Executor, spec executor.Spec) executor.Result {
	t.Helper()
	return executortest.MustRun(t, e, spec)
}

// eventually waits until cond (which must not block) holds, or fails after d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	evt.True(t, d, cond, "timed out waiting for %s", what)
}
