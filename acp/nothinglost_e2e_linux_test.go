package acp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

// Issue 31's end-to-end tests through the real binary: a spill directory
// someone else could control is refused (items 2 and 3), and a full disk
// does not rewrite history (item 1).

// printALot makes the model run a command whose output passes the spill
// threshold and returns what the model read of it.
func printALot(t *testing.T, d *daemon, model *llmtest.Server, sid string) string {
	t.Helper()
	model.Push(
		llmtest.Calls(llmtest.Call{ID: "call_1", Name: "bash", Args: `{"command":"head -c 300000 /dev/zero | tr '\\0' x; echo","description":"Print a lot"}`}),
		llmtest.Reply("done"),
	)
	d.promptExpect(sid, "print a lot", "end_turn")
	return toolResultOf(t, model, "call_1")
}

// A symlinked, foreign-owned or world-writable spill directory is refused:
// the command still runs, the model reads the contract's marker with
// "(unavailable)" and the reason on the next line, the log says why, and
// nothing is written into the hostile directory.
func TestE2EHostileSpillDirIsRefused(t *testing.T) {
	tests := []struct {
		name, reason string
		plant        func(t *testing.T, spill string) (watch string)
	}{
		{"symlinked", "is a symlink", func(t *testing.T, spill string) string {
			target := t.TempDir()
			if err := os.Symlink(target, spill); err != nil {
				t.Fatal(err)
			}
			return target
		}},
		{"foreign-owned", "is owned by uid 65534", func(t *testing.T, spill string) string {
			if os.Geteuid() != 0 {
				skipOrFail(t, "needs root to give the spill directory to another user")
			}
			if err := os.Mkdir(spill, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(spill, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			return spill
		}},
		{"world-writable", "is writable by its group or others (mode 0777)", func(t *testing.T, spill string) string {
			if err := os.Mkdir(spill, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(spill, 0o777); err != nil {
				t.Fatal(err)
			}
			return spill
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			spill := filepath.Join(state, "spill")
			watch := tc.plant(t, spill)
			model := llmtest.New(t)
			d := startModelDaemon(t, daemonBinary(t), state, model, nil)
			sid := d.newSessionOnly(t.TempDir())
			got := printALot(t, d, model, sid)
			if !strings.Contains(got, "\nxxxxxxxx") {
				t.Errorf("the command did not run: %q", got[:min(len(got), 200)])
			}
			// The marker ends the output; the reason is the last line.
			marker := "xxxx\n[output truncated; full output: (unavailable)]\n"
			reason := "[the full output could not be saved: unsafe spill directory: " + spill + " " + tc.reason
			last := got[strings.LastIndex(got, "\n")+1:]
			if !strings.Contains(got, marker) || !strings.HasPrefix(last, reason) || !strings.HasSuffix(last, "]") {
				t.Errorf("the model's text ends %q, want the contract's marker, then %q…]", got[max(0, len(got)-len(marker)-len(reason)-20):], reason)
			}
			d.closeAndWait()
			if log := d.Stderr(); !strings.Contains(log, "spill directory refused") || !strings.Contains(log, tc.reason) {
				t.Errorf("the log does not say why the spill directory was refused")
			}
			if entries, _ := os.ReadDir(watch); len(entries) != 0 {
				t.Errorf("wrote into the hostile directory: %v", entries)
			}
		})
	}
}
