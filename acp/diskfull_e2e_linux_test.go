package acp_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
)

// mountTmpfs mounts a small tmpfs for the test's state directory. It needs
// root: it skips with the reason elsewhere, and fails when CI=true.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("cannot mount a tmpfs: %v", err)
		}
		t.Skipf("cannot mount a tmpfs (needs root): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fillDisk writes a file until the file system is full.
func fillDisk(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			return
		}
	}
}

// A full disk under the state directory is told to the user in the
// session, the records are kept, and once there is room again they are
// written: a reload shows the completed call as completed, not interrupted.
func TestE2EDiskFullLosesNothing(t *testing.T) {
	state := mountTmpfs(t, "2m")
	d := startDaemonIn(t, state, acptest.ZedCapabilities(), nil)
	cwd := t.TempDir()
	sid := d.newSession(cwd)
	d.promptExpect(sid, "!echo hello", "end_turn")

	filler := filepath.Join(state, "filler")
	fillDisk(t, filler)
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
