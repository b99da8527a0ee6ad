package sandbox

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
)

// TestRemoteWrapperParses: the wrapper is valid bash at every confined
// level, for paths with quotes, spaces and newlines, and carries the
// protected names from the Go tables (no second copy to drift).
func TestRemoteWrapperParses(t *testing.T) {
	for _, level := range []executor.Level{executor.LevelReadOnly, executor.LevelWorkspace, executor.LevelWorkspaceNetwork} {
		w := RemoteWrapper(RemoteSpec{Level: level, Workspace: "/w/it's a\nws", Roots: []string{"/r/\"x\""}, ScriptVar: "s", Pre: "pre",
			StateDir: "/s/it's", SpillDir: "/s/it's/spill/o-x", AllowNewRepository: true})
		if out, err := exec.Command("bash", "-n", "-c", w).CombinedOutput(); err != nil {
			t.Errorf("%s: the wrapper does not parse: %v %s", level, err, out)
		}
		if !level.Writable() {
			continue
		}
		for _, name := range append(append([]string{}, DefaultProtected[1:]...), HomeProtected...) {
			if !strings.Contains(w, shq(name)) {
				t.Errorf("%s: %s is not in the wrapper", level, name)
			}
		}
		for _, g := range gitProtected {
			if !strings.Contains(w, shq(g.name)) {
				t.Errorf("%s: .git/%s is not in the wrapper", level, g.name)
			}
		}
	}
}
