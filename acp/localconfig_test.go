package acp

import (
	"context"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor/local"
	"github.com/dsh-acp/dsh-acp/replay"
	"github.com/dsh-acp/dsh-acp/tools"
)

// localConfig is a server configuration over a fresh state directory: its
// journal store, a local executor (shut down when the test ends) and the
// bash tools on it.
func localConfig(t *testing.T) Config {
	t.Helper()
	state := t.TempDir()
	store, err := replay.OpenStore(state)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := local.New(local.Config{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ex.Shutdown(context.Background()) })
	return Config{Executor: ex, Tools: tools.NewBash(ex, tools.Config{}), Store: store}
}
