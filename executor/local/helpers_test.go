package local

import (
	"context"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
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
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return e
}

// resolve builds a Spec for command in a fresh temporary workdir.
func resolve(t *testing.T, e *Executor, command string) executor.Spec {
	t.Helper()
	spec, err := e.Resolve(executor.Request{Command: command, SessionCwd: t.TempDir()})
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	return spec
}

// run runs command in the foreground and fails the test on an error.
func run(t *testing.T, e *Executor, spec executor.Spec) executor.Result {
	t.Helper()
	res, err := e.Run(context.Background(), spec, nil)
	if err != nil {
		t.Fatalf("Run(%.60q): %v", spec.Command, err)
	}
	return res
}

// eventually waits until cond (which must not block) holds, or fails after d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	evt.True(t, d, cond, "timed out waiting for %s", what)
}
