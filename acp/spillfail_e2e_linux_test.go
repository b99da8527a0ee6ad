package acp_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

// When the spill file cannot be written (the state directory's disk is
// full), the model's text ends with the tool contract's marker, "full
// output: (unavailable)", and the reason on the line after it, instead of
// naming a file that is not complete.
func TestE2ESpillWriteFailureIsSaid(t *testing.T) {
	state := acptest.MountTmpfs(t, "2m")
	model := llmtest.New(t)
	d := startModelDaemon(t, daemonBinary(t), state, model, nil)
	sid := d.newSessionOnly(t.TempDir())
	acptest.FillDisk(t, filepath.Join(state, "filler"))

	model.Push(
		llmtest.Calls(llmtest.Call{ID: "call_1", Name: "bash", Args: `{"command":"head -c 300000 /dev/zero | tr '\\0' x; echo","description":"Print a lot"}`}),
		llmtest.Reply("done"),
	)
	d.promptExpect(sid, "print a lot", "end_turn")
	got := toolResultOf(t, model, "call_1")
	// The tool contract's marker, then the reason on a line of its own.
	const want = "\n[output truncated; full output: (unavailable)]\n[the full output could not be saved: no space left on device]"
	if !strings.HasSuffix(got, want) {
		t.Errorf("the model's text ends %q, want %q", got[max(0, len(got)-len(want)-40):], want)
	}
}
