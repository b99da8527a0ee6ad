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

// A full disk loses nothing: the record whose write fails is kept, the
// caller learns it (ErrKept), and the first Append after space came back
// writes it, in order, before the new one.
func TestFullDiskKeepsRecordsUntilTheyFit(t *testing.T) {
	state := acptest.MountTmpfs(t, "256k")
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
	if err := j.Append(event.UserPrompt{Text: "before"}); err != nil {
		t.Fatal(err)
	}
	acptest.FillDisk(t, filler)
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
