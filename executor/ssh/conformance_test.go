package ssh

import (
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
	executortest.Run(t, func(t *testing.T) executor.Executor {
		return newTestExecutor(t, testConfig(t, srv))
	})
}
