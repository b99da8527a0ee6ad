package ssh

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor/engine"
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
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return e
}

// processes lists the live (not zombie) processes whose command line holds
// marker: the host is this machine.
func processes(marker string) []string {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var out []string
	for _, dir := range dirs {
		cmdline, err := os.ReadFile(dir + "/cmdline")
		if err != nil || !strings.Contains(string(cmdline), marker) {
			continue
		}
		stat, err := os.ReadFile(dir + "/stat")
		if err != nil {
			continue
		}
		if i := strings.LastIndexByte(string(stat), ')'); i >= 0 {
			if f := strings.Fields(string(stat[i+1:])); len(f) > 0 && (f[0] == "Z" || f[0] == "X") {
				continue
			}
		}
		out = append(out, filepath.Base(dir)+": "+strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " "))
	}
	return out
}
