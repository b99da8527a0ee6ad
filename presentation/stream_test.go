package presentation

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
	"unsafe"

	acp "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/tools"
)

// recorder collects a card stream's writes; got delivers each as it comes.
type recorder struct {
	mu     sync.Mutex
	writes []string
	got    chan string
}

func newRecorder() *recorder { return &recorder{got: make(chan string, 1024)} }

func (r *recorder) write(s string) {
	r.mu.Lock()
	r.writes = append(r.writes, s)
	r.mu.Unlock()
	r.got <- s
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.writes...)
}

// await returns the next write; the timeout only turns a hang into a
// failure (the interval under test is an hour).
func (r *recorder) await(t *testing.T, what string) string {
	t.Helper()
	select {
	case s := <-r.got:
		return s
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no write", what)
		return ""
	}
}

// An hour-long interval: any chunk that waits for it never arrives.
var hourly = FlushPolicy{Interval: time.Hour, Bytes: 1 << 20}

// The first chunk after a quiet period goes out at once, without waiting for
// the interval (leading edge); what follows within the interval is held and
// sent in one piece.
func TestCardStreamSendsTheFirstChunkAtOnce(t *testing.T) {
	r := newRecorder()
	s := newCardStream(hourly, r.write)
	s.append("first\n")
	if got := r.await(t, "the first chunk"); got != "first\n" {
		t.Fatalf("first write = %q, want %q", got, "first\n")
	}
	for i := range 1000 {
		s.append(strings.Repeat("x", i%7) + "\n")
	}
	s.close()
	if n := len(r.all()); n != 2 {
		t.Errorf("1001 chunks within one interval made %d writes, want 2 (the first, then the rest at close)", n)
	}
}

// Output piling up does not send sooner: the interval alone bounds the
// number of flushes (a card gets at most 60 a second), and a flush bigger
// than Bytes goes out as several updates, each cut on a character boundary.
func TestCardStreamPileUpWaitsForTheInterval(t *testing.T) {
	r := newRecorder()
	s := newCardStream(FlushPolicy{Interval: time.Hour, Bytes: 1000}, r.write)
	s.append("a")
	r.await(t, "the first chunk")
	var want strings.Builder
	want.WriteString("a")
	for range 500 {
		s.append("héllo, wörld ") // 2-byte characters, so cuts can fall inside one
		want.WriteString("héllo, wörld ")
	}
	r.mu.Lock()
	early := len(r.writes) - 1
	r.mu.Unlock()
	s.close()
	if early > 0 {
		t.Errorf("%d writes before the interval passed; piled-up output must wait", early)
	}
	writes := r.all()
	if got := strings.Join(writes, ""); got != want.String() {
		t.Fatalf("the writes do not add up to the input (%d bytes, want %d)", len(got), want.Len())
	}
	for i, w := range writes {
		if len(w) > 1000 || !utf8.ValidString(w) {
			t.Errorf("write %d: %d bytes, valid UTF-8 %v; want at most 1000 valid bytes", i, len(w), utf8.ValidString(w))
		}
	}
	if len(writes) != 1+(want.Len()-1+999)/1000 {
		t.Errorf("%d writes for %d bytes in updates of at most 1000", len(writes), want.Len())
	}
}

// What arrives within the interval is sent when it ends, without a close.
func TestCardStreamSendsTheRestWhenTheIntervalEnds(t *testing.T) {
	r := newRecorder()
	s := newCardStream(FlushPolicy{Interval: time.Millisecond, Bytes: 1 << 20}, r.write)
	defer s.close()
	s.append("a")
	r.await(t, "the first chunk")
	s.append("b")
	if got := r.await(t, "the trailing chunk"); got != "b" {
		t.Errorf("trailing write = %q, want %q", got, "b")
	}
}

func TestCardStreamSplitKeepsAWideCharacterWhole(t *testing.T) {
	r := newRecorder()
	s := newCardStream(FlushPolicy{Interval: time.Hour, Bytes: 2}, r.write)
	s.close()              // nothing sent yet: the split runs at close
	s.send([]string{"€€"}) // 3 bytes each: no boundary within 2 bytes
	if got := r.all(); len(got) != 2 || got[0] != "€" || got[1] != "€" {
		t.Errorf("writes = %q, want two whole characters", got)
	}
}

// terminalCards opens every call as a terminal card.
type terminalCards struct{}

func (terminalCards) PresentCall(name string, _ json.RawMessage) tools.CallIntent {
	return tools.CallIntent{Card: tools.CardTerminal, Title: name, Kind: "execute"}
}

func (terminalCards) PresentResult(string, json.RawMessage, event.Result) tools.ResultIntent {
	return tools.ResultIntent{Card: tools.CardTerminal}
}

// Through the presenter: a live card's first chunk reaches Send without
// waiting for the flush interval.
func TestPresenterSendsACardsFirstChunkAtOnce(t *testing.T) {
	sent := make(chan acp.SessionUpdate, 16)
	p := NewPresenter(PresenterOptions{
		Send:  func(u acp.SessionUpdate) { sent <- u },
		Cards: terminalCards{},
		Caps:  Caps{Terminal: true},
		Flush: hourly,
	})
	p.Emit(event.ToolCall{ID: "c1", Name: "bash"})
	<-sent // the card
	p.Emit(event.ToolOutput{ID: "c1", Data: "hello\n"})
	select {
	case u := <-sent:
		out, _ := u.ToolCallUpdate.Meta[metaTerminalOutput].(terminalOutput)
		if out.Data != "hello\n" {
			t.Errorf("first update after the card = %+v, want the chunk", u.ToolCallUpdate)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first chunk waited for the flush interval")
	}
	p.Emit(event.ToolResult{ID: "c1", Name: "bash"})
}

// A flush of one long piece is cut into updates that share its memory: the
// stream copies only to join short pieces.
func TestCardStreamCutsALongPieceWithoutCopying(t *testing.T) {
	r := newRecorder()
	s := newCardStream(FlushPolicy{Interval: time.Hour, Bytes: 1000}, r.write)
	s.close()
	big := strings.Repeat("ü", 2500) // 5000 bytes
	s.send([]string{big})
	writes := r.all()
	if len(writes) != 5 || strings.Join(writes, "") != big {
		t.Fatalf("%d writes that add up to %d bytes, want 5 adding up to the piece", len(writes), len(strings.Join(writes, "")))
	}
	base := uintptr(unsafe.Pointer(unsafe.StringData(big)))
	for i, w := range writes {
		if p := uintptr(unsafe.Pointer(unsafe.StringData(w))); p < base || p >= base+uintptr(len(big)) {
			t.Errorf("write %d is a copy, not a cut of the piece", i)
		}
	}
}

// Whichever flushes — the leading edge, the timer, an append that finds the
// timer late — every byte is written once, in order.
func TestCardStreamWritesEveryByteOnceInOrder(t *testing.T) {
	var mu sync.Mutex
	var got strings.Builder
	s := newCardStream(FlushPolicy{Interval: 50 * time.Microsecond, Bytes: 100}, func(p string) {
		mu.Lock()
		got.WriteString(p)
		mu.Unlock()
	})
	var want strings.Builder
	for i := range 20000 {
		piece := strconv.Itoa(i) + ","
		want.WriteString(piece)
		s.append(piece)
	}
	s.close()
	if got.String() != want.String() {
		t.Fatalf("wrote %d bytes, want %d, or out of order", got.Len(), want.Len())
	}
}

// finish leaves the last update's worth of pending output to the caller
// (the card's final update) and sends what comes before it.
func TestCardStreamFinishKeepsTheTailForTheFinalUpdate(t *testing.T) {
	r := newRecorder()
	s := newCardStream(FlushPolicy{Interval: time.Hour, Bytes: 10}, r.write)
	s.append("first")
	r.await(t, "the first chunk")
	s.append("0123456789abcdé") // 16 bytes: é is two
	s.append("xyz")
	tail := s.finish()
	writes := r.all()
	if got := strings.Join(writes, "") + tail; got != "first0123456789abcdéxyz" {
		t.Fatalf("writes %q and tail %q do not add up to the input", writes, tail)
	}
	if len(tail) > 10 || !utf8.ValidString(tail) || len(writes) != 2 {
		t.Errorf("writes %q, tail %q: want one write before a valid tail of at most 10 bytes", writes, tail)
	}
	s.append("late")
	if len(r.all()) != 2 {
		t.Error("a write after finish")
	}
}

// The output still pending when a card ends rides on its final update:
// ending a card adds no update outside the frame.
func TestPresenterSendsTheLastOutputWithTheFinalUpdate(t *testing.T) {
	var sent []acp.SessionUpdate
	var mu sync.Mutex
	p := NewPresenter(PresenterOptions{
		Send:  func(u acp.SessionUpdate) { mu.Lock(); sent = append(sent, u); mu.Unlock() },
		Cards: terminalCards{},
		Caps:  Caps{Terminal: true},
		Flush: hourly,
	})
	p.Emit(event.ToolCall{ID: "c1", Name: "bash"})
	p.Emit(event.ToolOutput{ID: "c1", Data: "first\n"}) // the leading edge, at once
	p.Emit(event.ToolOutput{ID: "c1", Data: "last\n"})  // held for the frame
	p.Emit(event.ToolResult{ID: "c1", Name: "bash"})
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 3 {
		t.Fatalf("%d updates, want the card, the first chunk and the final update", len(sent))
	}
	final := sent[2].ToolCallUpdate
	out, _ := final.Meta[metaTerminalOutput].(terminalOutput)
	if _, exit := final.Meta[metaTerminalExit]; !exit || out.Data != "last\n" {
		t.Errorf("final update meta %+v, want the exit and the last output", final.Meta)
	}
}
