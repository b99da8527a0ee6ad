package ssh

import (
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/engine"
	"github.com/dsh-acp/dsh-acp/executor/executortest"
	"github.com/dsh-acp/dsh-acp/internal/sshdtest"
)

// testGrace is the TERM→KILL grace of test executors.
const testGrace = 300 * time.Millisecond

// testConfig is an executor configuration for srv with a private local and
// remote state directory.
func testConfig(t *testing.T, srv *sshdtest.Server) Config {
	t.Helper()
	return Config{
		Target:         Target{User: srv.User, Host: srv.Host, Port: srv.Port},
		Identity:       srv.ClientKey,
		KnownHosts:     srv.KnownHosts,
		RemoteStateDir: t.TempDir(),
		Engine:         engine.Config{StateDir: t.TempDir(), Grace: testGrace},
	}
}

// newTestExecutor builds an executor for cfg, shut down when t ends.
func newTestExecutor(t *testing.T, cfg Config) *Executor {
	t.Helper()
	e, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	executortest.ShutDownAtEnd(t, e, 20*time.Second)
	return e
}

// runIn runs cmd at level with ws as the session's directory (and roots
// as its additional ones) and fails the test if it cannot run.
func runIn(t *testing.T, e *Executor, ws string, level executor.Level, roots []string, cmd string) executor.Result {
	t.Helper()
	spec, err := e.Resolve(executor.Request{Command: cmd, SessionCwd: ws, Level: level, Roots: roots})
	if err != nil {
		t.Fatal(err)
	}
	return executortest.MustRun(t, e, spec)
}
