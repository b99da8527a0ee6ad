package local

import (
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/executortest"
)

func TestConformance(t *testing.T) {
	executortest.Run(t, func(t *testing.T) executor.Executor {
		return newTestExecutor(t, Config{})
	})
}
