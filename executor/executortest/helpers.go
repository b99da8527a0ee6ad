package executortest

import (
	"context"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
)

// ShutDownAtEnd shuts e down when t ends, waiting at most d, and fails t
// if Shutdown reports an error.
func ShutDownAtEnd(t testing.TB, e executor.Executor, d time.Duration) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
}

// MustResolve builds e's Spec for command in a fresh temporary session cwd,
// failing t on an error.
func MustResolve(t testing.TB, e executor.Executor, command string) executor.Spec {
	t.Helper()
	spec, err := e.Resolve(executor.Request{Command: command, SessionCwd: t.TempDir()})
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	return spec
}

// MustRun runs spec on e in the foreground, failing t on an error.
func MustRun(t testing.TB, e executor.Executor, spec executor.Spec) executor.Result {
	t.Helper()
	res, err := e.Run(context.Background(), spec, nil)
	if err != nil {
		t.Fatalf("Run(%.60q): %v", spec.Command, err)
	}
	return res
}
