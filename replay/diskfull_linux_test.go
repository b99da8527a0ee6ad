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
	"github.com/dsh-acp/dsh-acp/internal/eventually"
)

// fullDiskJournal opens a journal on a small tmpfs once the store's reserve
// is in place, and fills the disk.
func fullDiskJournal(t *testing.T, id string) (*Store, *Journal, string) {
	t.Helper()
	state := acptest.MountTmpfs(t, "2m")
	s, err := OpenStore(state)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	j, err := s.Create(id, "/p", "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	// As the daemon does once its session/new reply is out.
	j.SyncSoon()
	eventually.True(t, 5e9, func() bool { // the syncer makes it after the header's fsync
		fi, err := os.Stat(filepath.Join(state, "sessions", reserveName))
		return err == nil && fi.Size() == reserveSize
	}, "no reserve file")
	if err := j.Append(event.UserPrompt{Text: "before"}); err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(state, "filler")
	acptest.FillDisk(t, filler)
	return s, j, filler
}

// A result that meets a full disk — which stays full through Close — is
// written compact: its call ends as it ended (payload, error flag), its
// texts keep their tails behind a line saying what was not saved and why,
// and a reload finds it in order. The reserve makes room for it.
func TestFullDiskWritesTheResultCompact(t *testing.T) {
	const id = "20260102T030405.000000Z-00000000000000aa"
	s, j, _ := fullDiskJournal(t, id)
	text := strings.Repeat("x", 64<<10) + "\nEND\n[exit code: 3]"
	card := strings.Repeat("card output line\n", 600<<10/17) + "LAST\n"
	res := event.Result{Text: text, CardOutput: card, Payload: []byte(`{"exitCode":3,"timeoutMs":120000}`)}
	err := j.Append(event.ToolResult{ID: "c1", Name: "bash", Args: []byte(`{"command":"big"}`), Result: res})
	if !errors.Is(err, ErrShortened) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append on a full disk: %v, want ErrShortened wrapping ENOSPC", err)
	}
	if n, b := j.Shortened(), j.Backlog(); n != 1 || b != 0 {
		t.Errorf("shortened %d, backlog %d: want 1 and 0", n, b)
	}
	if err := j.Append(event.TurnEnd{StopReason: event.EndTurn}); err != nil {
		t.Errorf("the turn's end after the compact result: %v", err)
	}
	if err := j.Close(); err != nil {
		t.Fatalf("close on the full disk: %v", err)
	}
	l, err := s.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Warnings) != 0 || len(l.Events) != 3 {
		t.Fatalf("%d events (want the prompt, the result, the turn end), warnings %q", len(l.Events), l.Warnings)
	}
	got, ok := l.Events[1].(event.ToolResult)
	if !ok {
		t.Fatalf("event 2 is %T, want the result", l.Events[1])
	}
	if string(got.Result.Payload) != string(res.Payload) || got.ID != "c1" || string(got.Args) != `{"command":"big"}` {
		t.Errorf("the compact result lost how the call ended: %+v", got)
	}
	note := " bytes of this text were not saved (no space left on device)]\n"
	for name, s := range map[string][2]string{"text": {got.Result.Text, "END\n[exit code: 3]"}, "card": {got.Result.CardOutput, "LAST\n"}} {
		if !strings.HasPrefix(s[0], "[dsh-acp: ") || !strings.Contains(s[0], note) || !strings.HasSuffix(s[0], s[1]) || len(s[0]) > compactKeep+100 {
			t.Errorf("compact %s (%d bytes) does not keep its tail behind the note: %.120q", name, len(s[0]), s[0])
		}
	}
}

// A streamed record (a card of more than bigCard bytes) that meets a full
// disk falls back the same way.
func TestStreamedRecordOnAFullDisk(t *testing.T) {
	const id = "20260102T030405.000000Z-00000000000000ab"
	s, j, filler := fullDiskJournal(t, id)
	card := strings.Repeat("card output line\n", 600<<10/17)
	err := j.Append(event.ToolResult{ID: "c1", Name: "bash", Result: event.Result{Text: "ok", CardOutput: card}})
	if !errors.Is(err, ErrShortened) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append on a full disk: %v, want ErrShortened wrapping ENOSPC", err)
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
	if len(l.Warnings) != 0 || len(l.Events) != 3 {
		t.Fatalf("%d events, warnings %q", len(l.Events), l.Warnings)
	}
	if r, ok := l.Events[1].(event.ToolResult); !ok || r.Result.Text != "ok" || !strings.HasSuffix(r.Result.CardOutput, "card output line\n") || len(r.Result.CardOutput) > compactKeep+100 {
		t.Errorf("event 2 is %T, want the compact result", l.Events[1])
	}
}
