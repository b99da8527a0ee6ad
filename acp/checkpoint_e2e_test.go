package acp_test

import (
	"os"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/presentation"
	"github.com/dsh-acp/dsh-acp/replay"
)

// A daemon killed while a command streams output loses nothing the user
// saw: the card's output was checkpointed into the journal while it ran,
// so the reloaded card shows it, then says the call was interrupted.
func TestE2ECrashKeepsLiveOutput(t *testing.T) {
	marker := acptest.NewMarker()
	t.Cleanup(func() { killMarkedGroups(t, marker) })
	d1 := startDaemon(t, acptest.ZedCapabilities(), nil)
	cwd := t.TempDir()
	sid := d1.newSession(cwd)
	cmd := "!export ACPTEST_MARKER=" + marker + "; echo seen-one; echo seen-two; sleep 600"
	d1.promptInBackground(sid, cmd)
	d1.waitFor(func() bool { return d1.count(sid, "tool_call_update", "seen-two") > 0 })
	// The checkpoint reaches the journal within about a second.
	path := d1.journalFilePath(sid)
	d1.waitFor(func() bool {
		b, _ := os.ReadFile(path)
		return strings.Contains(string(b), `"type":"output"`) && strings.Contains(string(b), "seen-two")
	})
	d1.sigkill()
	killMarkedGroups(t, marker)

	d2 := startDaemonIn(t, d1.stateDir, acptest.ZedCapabilities(), nil)
	raw, err := d2.loadSession(sid, cwd)
	if err != nil {
		t.Fatalf("session/load: %v", err)
	}
	var sleeper *card
	for _, c := range cards(decodeUpdates(t, raw)) {
		if strings.Contains(c.open.Title, "sleep 600") {
			sleeper = c
		}
	}
	if sleeper == nil || sleeper.final == nil {
		t.Fatalf("the interrupted card was not replayed whole: %+v", sleeper)
	}
	want := "seen-one\nseen-two\n" + presentation.ReasonPrefix + replay.InterruptedText + "\n"
	if got := strings.Join(sleeper.outputs, ""); got != want {
		t.Errorf("replayed terminal output %q, want %q", got, want)
	}
	if sleeper.final.Status != "failed" {
		t.Errorf("status %q, want failed", sleeper.final.Status)
	}
}
