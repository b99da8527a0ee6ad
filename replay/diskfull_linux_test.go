package replay

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// smallTmpfs mounts a tmpfs of size bytes at a new directory, for as long
// as the test runs. It needs root; it skips with the reason elsewhere, and
// fails instead when CI=true.
func smallTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("cannot mount a tmpfs for the disk-full test: %v", err)
		}
		t.Skipf("cannot mount a tmpfs (needs root): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// A full disk loses nothing: the record whose write fails is kept, the
// caller learns it (ErrKept), and the first Append after space came back
// writes it, in order, before the new one.
func TestFullDiskKeepsRecordsUntilTheyFit(t *testing.T) {
	state := smallTmpfs(t, "256k")
	s, err := OpenStore(state)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	j, err := s.Create("20260102T030405.000000Z-00000000000000aa", "/p", "test")
	if err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(state, "filler")
	fill := func() {
		f, err := os.Create(filler)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		chunk := make([]byte, 4096)
		for {
			if _, err := f.Write(chunk); err != nil {
				return // full
			}
		}
	}
	if err := j.Append(event.UserPrompt{Text: "before"}); err != nil {
		t.Fatal(err)
	}
	fill()
	big := event.ToolResult{ID: "c1", Name: "bash", Result: event.Result{Text: strings.Repeat("x", 64<<10)}}
	err = j.Append(big)
	if !errors.Is(err, ErrKept) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append on a full disk: %v, want ErrKept wrapping ENOSPC", err)
	}
	if n := j.Backlog(); n != 1 {
		t.Fatalf("backlog %d, want 1", n)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := j.Append(event.TurnEnd{StopReason: event.EndTurn}); err != nil {
		t.Fatalf("append after space came back: %v", err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := s.Load("20260102T030405.000000Z-00000000000000aa")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Warnings) != 0 {
		t.Errorf("warnings %q", l.Warnings)
	}
	if len(l.Events) != 3 {
		t.Fatalf("%d events, want the prompt, the kept result and the turn end", len(l.Events))
	}
	if r, ok := l.Events[1].(event.ToolResult); !ok || r.Result.Text != big.Result.Text {
		t.Errorf("event 2 is %T, want the kept result", l.Events[1])
	}
}
