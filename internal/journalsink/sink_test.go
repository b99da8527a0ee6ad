package journalsink

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/presentation"
	"github.com/dsh-acp/dsh-acp/replay"
)

// A checkpoint of a card's 2 MiB of live output is journaled from the
// chunks as they came, without joining them or building its line: the
// flush allocates a small fraction of the output, and the journal reads
// the whole output back.
func TestCheckpointAllocatesLittle(t *testing.T) {
	store, j := newJournal(t)
	var c checkpoints
	c.write = func(ev event.Event) {
		if err := j.Append(ev); err != nil {
			t.Error(err)
		}
	}
	defer c.stop()
	chunk := strings.Repeat("printable output: the quick brown fox 0123456789\n", 1<<10)
	var want strings.Builder
	for range 2 << 20 / len(chunk) {
		c.output("call_1", chunk)
		want.WriteString(chunk)
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	c.flush()
	runtime.ReadMemStats(&m1)
	if got := m1.TotalAlloc - m0.TotalAlloc; got > 256<<10 {
		t.Errorf("a checkpoint of %d bytes allocated %d bytes", want.Len(), got)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := store.Load("s1")
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for _, ev := range l.Events {
		if cp, ok := ev.(event.OutputCheckpoint); ok {
			got.WriteString(cp.Data)
		}
	}
	if got.String() != want.String() {
		t.Errorf("read back %d bytes of checkpointed output, want %d", got.Len(), want.Len())
	}
}

// notices records what the sink tells the session's presenter.
type notices struct{ got []presentation.Notice }

func (n *notices) Emit(event.Event)             {}
func (n *notices) Notice(x presentation.Notice) { n.got = append(n.got, x) }

// A journal that cannot write is told once, with the cause, however many
// writes fail after it; streaming events are never written.
func TestFailureToldOnce(t *testing.T) {
	_, j := newJournal(t)
	var tell notices
	s := New(j, zap.NewNop(), "s1", &tell)
	defer s.Close()
	s.Emit(event.TextDelta{Text: "streamed"}) // not journaled: no write, no failure
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if len(tell.got) != 0 {
		t.Fatalf("told %+v before any write failed", tell.got)
	}
	s.Emit(event.UserPrompt{Text: "one"})
	s.EmitBatch([]event.Event{event.UserPrompt{Text: "two"}, event.TurnEnd{}})
	if len(tell.got) != 1 || tell.got[0].Severity != presentation.SeverityError || tell.got[0].Title != "History is not being saved" {
		t.Fatalf("told %+v, want one error notice", tell.got)
	}
	if d := tell.got[0].Description; !strings.Contains(d, "cannot be saved right now (") {
		t.Errorf("the notice does not give the cause: %q", d)
	}
}

func TestKeptNoteAndRootCause(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("append: %w", replay.ErrKept), "kept in memory"},
		{fmt.Errorf("append: %w", replay.ErrShortened), "saved shortened"},
		{fmt.Errorf("append: %w", replay.ErrDropped), "live output is not saved"},
		{errors.New("other"), "may be missing"},
	} {
		if got := keptNote(tc.err); !strings.Contains(got, tc.want) {
			t.Errorf("keptNote(%v) = %q, want it to say %q", tc.err, got, tc.want)
		}
	}
	inner := errors.New("no space left on device")
	if got := rootCause(fmt.Errorf("write: %w", errors.Join(errors.New("first"), fmt.Errorf("sync: %w", inner)))); got != inner.Error() {
		t.Errorf("rootCause = %q", got)
	}
}

// newJournal is a store of its own, closed with the test, and session s1's
// journal in it.
func newJournal(t *testing.T) (*replay.Store, *replay.Journal) {
	t.Helper()
	store, err := replay.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	j, err := store.Create("s1", "/w", "test")
	if err != nil {
		t.Fatal(err)
	}
	return store, j
}
