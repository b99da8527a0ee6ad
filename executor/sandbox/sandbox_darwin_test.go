package sandbox

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/engine"
	"github.com/dsh-acp/dsh-acp/executor/local"
)

// TestDarwinOffersOnlyOff: on darwin nothing confines a command; only off is
// offered, with the reason, and an explicit confined level is refused.
func TestDarwinOffersOnlyOff(t *testing.T) {
	sp, err := NewSpawner(Config{Config: local.Config{StateDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if got := sp.Levels(); !slices.Equal(got, []executor.Level{executor.LevelOff}) || sp.DefaultLevel() != executor.LevelOff {
		t.Errorf("levels %v default %v; want off only", got, sp.DefaultLevel())
	}
	why := sp.Unavailable()
	if !errors.Is(why, executor.ErrSandbox) || !strings.Contains(why.Error(), "no bubblewrap on macOS") {
		t.Errorf("Unavailable: %v", why)
	}
	_, err = sp.Spawn(engine.Command{Spec: executor.Spec{Command: "true", Workdir: t.TempDir(), Workspace: t.TempDir(), Level: executor.LevelWorkspace}})
	if !errors.Is(err, executor.ErrSandbox) {
		t.Errorf("Spawn at workspace: %v; want ErrSandbox", err)
	}
}
