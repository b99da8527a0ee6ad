package ssh

import (
	"testing"
	"time"

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
