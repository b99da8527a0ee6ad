package acp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
)

// A full disk under the state directory is told to the user in the
// session; what does not fit is written compact at once (or kept and
// written first once there is room: replay's tests hold both), and a
// reload shows the completed call as completed, not interrupted. (With the
// disk still full through a restart: nothinglost_e2e_linux_test.go.)
func TestE2EDiskFullLosesNothing(t *testing.T) {
	state := acptest.MountTmpfs(t, "2m")
	d := startDaemonIn(t, state, acptest.ZedCapabilities(), nil)
	cwd := t.TempDir()
	sid := d.newSession(cwd)
	d.promptExpect(sid, "!echo hello", "end_turn")

	filler := filepath.Join(state, "filler")
	acptest.FillDisk(t, filler)
	d.promptExpect(sid, "!head -c 300000 /dev/zero | tr '\\0' x; echo", "end_turn")
	if n := d.count(sid, "agent_message_chunk", "this session cannot be saved right now (no space left on device)"); n != 1 {
		t.Errorf("the user was told %d times that the session is not saved, want once", n)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	d.promptExpect(sid, "!echo after", "end_turn")
	if n := d.count(sid, "agent_message_chunk", "being saved again"); n != 1 {
		t.Errorf("the user was told %d times that saving resumed, want once", n)
	}
	d.closeAndWait()

	d2 := startDaemonIn(t, state, acptest.ZedCapabilities(), nil)
	raw, err := d2.loadSession(sid, cwd)
	if err != nil {
		t.Fatalf("session/load: %v", err)
	}
	text := rawText(raw)
	if strings.Contains(text, "interrupted") {
		t.Error("a call that completed replays as interrupted")
	}
	var big *card
	for _, c := range cards(decodeUpdates(t, raw)) {
		if strings.HasPrefix(c.open.Title, "head -c 300000") {
			big = c
		}
	}
	if big == nil || big.final.Status != "completed" {
		t.Fatalf("the big call does not replay completed: %+v", big)
	}
}
