package replay

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// unknownEvent is an event type the journal does not know.
type unknownEvent struct{ event.Event }

// AppendAll writes its records with one write, numbered in order, and a
// record that does not encode leaves the others in.
func TestAppendAllIsOneWrite(t *testing.T) {
	s, _ := newTestStore(t)
	var writes atomic.Int32
	s.writeFile = func(f *os.File, b []byte) (int, error) {
		writes.Add(1)
		return f.Write(b)
	}
	j := mustCreate(t, s, "s1", "/w")
	writes.Store(0)
	res := event.ToolResult{ID: "c1", Name: "bash", Result: event.Result{Text: "ok", CardOutput: "ok\n"}}
	if err := j.AppendAll(event.UserPrompt{Text: "!true"}, event.ToolCall{ID: "c1", Name: "bash", Direct: true}); err != nil {
		t.Fatal(err)
	}
	if err := j.AppendAll(res, event.TextDelta{Text: "not journaled"}, unknownEvent{}, event.TurnEnd{StopReason: event.EndTurn}); !errors.Is(err, ErrUnknownEvent) {
		t.Errorf("AppendAll with an unknown event: %v, want ErrUnknownEvent", err)
	}
	if n := writes.Load(); n != 2 {
		t.Errorf("two AppendAll calls made %d writes, want 2", n)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	path, _ := s.Path("s1")
	lines := readLines(t, path)
	want := []string{`"seq":1,`, `"seq":2,`, `"seq":3,`, `"seq":4,`, `"seq":5,`}
	kinds := []string{`"type":"session"`, `"type":"user_prompt"`, `"type":"tool_call"`, `"type":"tool_result"`, `"type":"turn_end"`}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d: %q", len(lines), len(want), lines)
	}
	for i, l := range lines {
		if !strings.Contains(l, want[i]) || !strings.Contains(l, kinds[i]) {
			t.Errorf("line %d: %s, want %s and %s", i+1, l, want[i], kinds[i])
		}
	}
}

// A batch with a big card streams the card's line from its text (no write,
// and so no buffer, of the card's size) and writes the turn's end after it:
// the same bytes as two Appends would write.
func TestAppendAllBigCard(t *testing.T) {
	big := strings.Repeat("x", 3*bigCard)
	evs := []event.Event{event.ToolResult{ID: "c1", Name: "bash", Result: event.Result{Text: "t", CardOutput: big}}, event.TurnEnd{StopReason: event.EndTurn}}
	write := func(batch bool) []string {
		s, _ := newTestStore(t)
		var largest atomic.Int64
		s.writeFile = func(f *os.File, b []byte) (int, error) {
			if n := int64(len(b)); n > largest.Load() {
				largest.Store(n)
			}
			return f.Write(b)
		}
		j := mustCreate(t, s, "s1", "/w")
		if batch {
			if err := j.AppendAll(evs...); err != nil {
				t.Fatal(err)
			}
			if n := largest.Load(); n >= int64(len(big)) {
				t.Errorf("AppendAll wrote %d bytes at once, as much as the card (%d): not streamed", n, len(big))
			}
		} else {
			for _, ev := range evs {
				mustAppend(t, j, ev)
			}
		}
		j.Close()
		path, _ := s.Path("s1")
		return readLines(t, path)
	}
	// The batch's records share one timestamp; everything else is the same.
	stamp := regexp.MustCompile(`"t":"[^"]*"`)
	one := stamp.ReplaceAllString(strings.Join(write(true), "\n"), "")
	two := stamp.ReplaceAllString(strings.Join(write(false), "\n"), "")
	if one != two {
		t.Errorf("AppendAll wrote other bytes than Append")
	}
}

// Turns ending in quick succession share one fsync: with an interval of an
// hour, the header's fsync and Close's are the only ones, however many
// turns end in between.
func TestTurnEndsShareAnFsync(t *testing.T) {
	s, _ := newTestStore(t)
	s.syncEvery = time.Hour
	var syncs atomic.Int32
	synced := make(chan struct{}, 100)
	s.syncFile = func(f *os.File) error {
		syncs.Add(1)
		synced <- struct{}{}
		return f.Sync()
	}
	j := mustCreate(t, s, "s1", "/w")
	j.SyncSoon()
	<-synced // the header's: nothing was synced for an interval, so at once
	for range 20 {
		mustAppend(t, j, event.TurnEnd{StopReason: event.EndTurn})
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if n := syncs.Load(); n != 2 {
		t.Errorf("%d fsyncs for a header and 20 turns within an interval, want 2 (the header's and Close's)", n)
	}
}

// A turn that ends after a quiet interval is synced without waiting for
// another turn or Close.
func TestTurnEndSyncedAfterInterval(t *testing.T) {
	s, _ := newTestStore(t)
	s.syncEvery = 20 * time.Millisecond
	synced := make(chan struct{}, 100)
	s.syncFile = func(f *os.File) error {
		synced <- struct{}{}
		return f.Sync()
	}
	j := mustCreate(t, s, "s1", "/w")
	defer j.Close()
	j.SyncSoon()
	<-synced
	mustAppend(t, j, event.TurnEnd{StopReason: event.EndTurn})
	select {
	case <-synced:
	case <-time.After(10 * time.Second):
		t.Fatal("the turn's end was not synced")
	}
}

// Create writes the header but asks for no fsync (the daemon's session/new
// reply must not compete with one): the file and directory are synced once
// SyncSoon asks, or by Close when nothing asked.
func TestCreateLeavesTheFsyncToSyncSoon(t *testing.T) {
	for _, asked := range []bool{false, true} {
		s, _ := newTestStore(t)
		s.syncEvery = time.Hour
		var files, dirs atomic.Int32
		synced := make(chan struct{}, 100)
		s.syncFile = func(f *os.File) error {
			files.Add(1)
			synced <- struct{}{}
			return f.Sync()
		}
		j := mustCreate(t, s, "s1", "/w")
		j.mu.Lock()
		dirSync := j.dirSync
		j.dirSync = func() error { dirs.Add(1); return dirSync() }
		j.mu.Unlock()
		if l, err := s.Load("s1"); err != nil || l.Header.ID != "s1" {
			t.Fatalf("the journal before any fsync: %v", err)
		}
		want := int32(1) // Close's
		if asked {
			j.SyncSoon()
			<-synced
			want++
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		if f, d := files.Load(), dirs.Load(); f != want || d != 1 {
			t.Errorf("SyncSoon asked %v: %d file fsyncs (want %d) and %d directory fsyncs (want 1)", asked, f, want, d)
		}
	}
}
