package sandbox

import (
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/executortest"
)

func TestConformance(t *testing.T) {
	requireBwrap(t)
	for _, level := range []executor.Level{executor.LevelWorkspace, executor.LevelReadOnly} {
		t.Run(string(level), func(t *testing.T) {
			executortest.Run(t, func(t *testing.T) executor.Executor {
				return newTestExecutor(t, Config{Level: level})
			})
		})
	}
}
