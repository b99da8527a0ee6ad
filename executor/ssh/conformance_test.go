package ssh

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/executortest"
	"github.com/dsh-acp/dsh-acp/internal/sshdtest"
)

// TestConformance runs the executor suite against a real sshd on
// 127.0.0.1: the "remote" host is this machine, so the suite's own checks
// (files in the session directory, spill files, processes in /proc) see
// what the host sees.
func TestConformance(t *testing.T) {
	srv := sshdtest.Start(t)
	executortest.RunOptions(t, sshOptions, func(t *testing.T) executor.Executor {
		return newTestExecutor(t, testConfig(t, srv))
	})
}

// sshOptions adapt the suite to a remote account: re-running a subtest as
// another local user does not change the account the host logs us in as.
var sshOptions = executortest.Options{
	Unenterable: func(t *testing.T, cwd string) string {
		if os.Geteuid() == 0 {
			t.Skip("the test host logs in as root, which may enter any directory: an unenterable workdir cannot be made")
		}
		dir := filepath.Join(cwd, "locked")
		if err := os.Mkdir(dir, 0); err != nil {
			t.Fatal(err)
		}
		return dir
	},
}
