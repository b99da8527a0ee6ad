package replay

import (
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// failingStore's journals fail every write while full is set, and every
// write longer than limit when limit > 0, with ENOSPC.
func failingStore(t *testing.T) (s *Store, full *atomic.Bool, limit *atomic.Int64) {
	s, _ = newTestStore(t)
	s.reserve = nil
	full, limit = new(atomic.Bool), new(atomic.Int64)
	s.writeFile = func(f *os.File, b []byte) (int, error) {
		if full.Load() || limit.Load() > 0 && int64(len(b)) > limit.Load() {
			return 0, syscall.ENOSPC
		}
		return f.Write(b)
	}
	return s, full, limit
}

// When even the compact record cannot be written, it waits in memory and
// is written first when space returns, before any later record; an output
// checkpoint is dropped instead (without a gap in the order).
func TestKeptRecordsAreWrittenFirstWhenSpaceReturns(t *testing.T) {
	s, full, _ := failingStore(t)
	j := mustCreate(t, s, "s1", "/w")
	full.Store(true)
	big := event.ToolResult{ID: "c1", Name: "bash", Result: event.Result{Text: strings.Repeat("y", 20000), Payload: []byte(`{"exitCode":0}`)}}
	if err := j.Append(big); !errors.Is(err, ErrKept) {
		t.Fatalf("result on a full disk: %v, want ErrKept", err)
	}
	if err := j.Append(event.OutputCheckpoint{ID: "c2", Data: "partial"}); !errors.Is(err, ErrDropped) {
		t.Errorf("checkpoint on a full disk: %v, want ErrDropped", err)
	}
	if err := j.Append(event.UserPrompt{Text: "next"}); !errors.Is(err, ErrKept) {
		t.Errorf("prompt behind the kept result: %v, want ErrKept", err)
	}
	if n := j.Backlog(); n != 2 {
		t.Errorf("backlog %d, want the result and the prompt", n)
	}
	full.Store(false)
	mustAppend(t, j, event.TurnEnd{StopReason: event.EndTurn})
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := s.Load("s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Warnings) != 0 || len(l.Events) != 3 {
		t.Fatalf("%d events, warnings %q", len(l.Events), l.Warnings)
	}
	if r, ok := l.Events[0].(event.ToolResult); !ok || r.Result.Text != big.Result.Text {
		t.Errorf("event 1 is %T, want the whole kept result", l.Events[0])
	}
	if p, ok := l.Events[1].(event.UserPrompt); !ok || p.Text != "next" {
		t.Errorf("event 2 is %#v, want the prompt", l.Events[1])
	}
}

// A kept record that still does not fit whole when the next append comes
// is written compact then, before the new record.
func TestKeptRecordIsWrittenCompactWhenOnlyThatFits(t *testing.T) {
	s, full, limit := failingStore(t)
	j := mustCreate(t, s, "s1", "/w")
	full.Store(true)
	text := strings.Repeat("z", 30000) + "\n[exit code: 1]"
	if err := j.Append(event.ToolResult{ID: "c1", Name: "bash", Result: event.Result{Text: text, Payload: []byte(`{"exitCode":1}`)}}); !errors.Is(err, ErrKept) {
		t.Fatalf("result on a full disk: %v, want ErrKept", err)
	}
	full.Store(false)
	limit.Store(compactLine)
	if err := j.Append(event.TurnEnd{StopReason: event.EndTurn}); !errors.Is(err, ErrShortened) {
		t.Errorf("append while only compact lines fit: %v, want ErrShortened for the kept record", err)
	}
	limit.Store(0)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := s.Load("s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Warnings) != 0 || len(l.Events) != 2 {
		t.Fatalf("%d events, warnings %q", len(l.Events), l.Warnings)
	}
	r, ok := l.Events[0].(event.ToolResult)
	if !ok || !strings.HasSuffix(r.Result.Text, "[exit code: 1]") || !strings.Contains(r.Result.Text, "bytes of this text were not saved (no space left on device)") || string(r.Result.Payload) != `{"exitCode":1}` {
		t.Errorf("event 1 is %#v, want the compact result", l.Events[0])
	}
}

// compact fits any record with long texts into compactLine bytes and
// leaves a short one alone.
func TestCompactForms(t *testing.T) {
	s, _ := newTestStore(t)
	j := mustCreate(t, s, "s1", "/w")
	j.mu.Lock()
	defer j.mu.Unlock()
	long := strings.Repeat("é", 20000)
	for _, ev := range []event.Event{
		event.UserPrompt{Text: long},
		event.AssistantMessage{Text: long, Reasoning: long},
		event.ToolResult{ID: "c", Name: "bash", Args: []byte(`{"command":"` + strings.Repeat("a", 10000) + `"}`), Result: event.Result{Text: long, CardOutput: long + "\x00\x00"}},
		event.Notice{Text: long},
		event.TurnEnd{StopReason: event.EndTurn},
	} {
		var r wireRecord
		if _, err := fromEvent(ev, &r); err != nil {
			t.Fatal(err)
		}
		c, cut, ok := j.compact(r, "why")
		line, err := j.enc.line(&c)
		if !ok || err != nil || len(line) > compactLine {
			t.Errorf("%T: compact ok %v, %d bytes, %v", ev, ok, len(line), err)
		}
		if _, short := ev.(event.TurnEnd); short == cut {
			t.Errorf("%T: shortened %v", ev, cut)
		}
	}
}
