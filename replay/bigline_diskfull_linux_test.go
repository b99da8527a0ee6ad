package replay

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/event"
)

// A streamed record that meets a full disk is cut away and kept whole, as
// any other: the next append after space came back writes it.
func TestStreamedRecordOnAFullDisk(t *testing.T) {
	state := acptest.MountTmpfs(t, "1m")
	s, err := OpenStore(state)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const id = "20260102T030405.000000Z-00000000000000ab"
	j, err := s.Create(id, "/p", "test")
	if err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(state, "filler")
	acptest.FillDisk(t, filler)
	card := strings.Repeat("card output line\n", 600<<10/17)
	err = j.Append(event.ToolResult{ID: "c1", Name: "bash", Result: event.Result{Text: "ok", CardOutput: card}})
	if !errors.Is(err, ErrKept) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append on a full disk: %v, want ErrKept wrapping ENOSPC", err)
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
	l, err := s.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Warnings) != 0 || len(l.Events) != 2 {
		t.Fatalf("%d events, warnings %q", len(l.Events), l.Warnings)
	}
	if r, ok := l.Events[0].(event.ToolResult); !ok || r.Result.CardOutput != card {
		t.Errorf("event 1 is %T, want the kept result", l.Events[0])
	}
}
