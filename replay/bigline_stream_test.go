package replay

import (
	"bytes"
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/wirejson"
)

// Escaping a text piece by piece writes what escaping it whole does,
// however the parts split it (characters across parts, invalid bytes,
// parts longer than a piece).
func TestTextPiecesEscapeLikeTheWhole(t *testing.T) {
	long := strings.Repeat("é€😀a\x00\"", bigPiece/5)
	tests := [][]string{
		nil,
		{""},
		{"plain"},
		{"a", "", "b"},
		{"\xe2", "\x82", "\xac"},     // € in three parts
		{"x\xe2\x82", "\xacy"},       // € across two
		{"\xf0\x9f", "\x98\x80"},     // 😀 across two
		{"\xe2", "x"},                // an incomplete character, then ASCII
		{"\xe2\x82", ""},             // incomplete at the very end
		{"\x80\x80\x80\x80", "\x80"}, // continuation bytes alone
		{"\xff", "\xfe\x80"},
		{long},
		{long[:bigPiece+1], long[bigPiece+1:]},
		{long, "\xe2", "\x82\xac", long},
		{"\u2028", "\u2029"},
	}
	for i, parts := range tests {
		checkPieces(t, i, parts)
	}
}

func FuzzTextPieces(f *testing.F) {
	f.Add([]byte("a\xe2\x82\xacb"), uint8(2), uint8(3))
	f.Add([]byte("\xf0\x9f\x98\x80\x00"), uint8(1), uint8(1))
	f.Fuzz(func(t *testing.T, b []byte, cut1, cut2 uint8) {
		s := string(b)
		i := min(int(cut1), len(s))
		j := min(i+int(cut2), len(s))
		checkPieces(t, 0, []string{s[:i], s[i:j], s[j:]})
	})
}

func checkPieces(t *testing.T, i int, parts []string) {
	t.Helper()
	whole := strings.Join(parts, "")
	want := wirejson.AppendString(nil, whole)
	var tp textPieces
	tp.reset(parts)
	got := []byte{'"'}
	var joined strings.Builder
	for {
		p, ok := tp.next()
		if !ok {
			break
		}
		if len(p) > bigPiece {
			t.Errorf("case %d: a %d-byte piece", i, len(p))
		}
		joined.WriteString(p)
		got = appendQuoted(got, p)
	}
	got = append(got, '"')
	if joined.String() != whole || !bytes.Equal(got, want) {
		t.Errorf("case %d (%q): pieces escape to %.80q, want %.80q", i, parts, got, want)
	}
	l := bigLine{head: []byte("H"), tail: []byte("T"), text: parts}
	if n := l.size(); n != len(want)+2 {
		t.Errorf("case %d: size %d, want %d", i, n, len(want)+2)
	}
}

// A streamed line is the generic encoding's, byte for byte, and a
// checkpoint given as parts reads back joined.
func TestStreamedLinesMatchTheGenericEncoding(t *testing.T) {
	text := strings.Repeat("a line of live output, <not escaped> & \"fine\" é\n", 3000)
	parts := []string{text[:1000], text[1000:70001], text[70001:]}
	card := strings.Repeat("printable card output 0123456789\n", 70<<10/33)
	s, _ := newTestStore(t)
	j := mustCreate(t, s, "s1", "/w")
	evs := []event.Event{
		event.OutputCheckpoint{ID: "call_1", Parts: parts},
		event.OutputCheckpoint{ID: "call_1", Data: text},
		event.ToolResult{ID: "call_1", Name: "bash", Args: json.RawMessage(`{"command":"x"}`),
			Result: event.Result{Text: "ok <b>", CardOutput: card, Payload: json.RawMessage(`{"exitCode":0}`)}},
	}
	mustAppend(t, j, evs...)
	path := j.f.Name()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(raw, []byte("\n"))
	lines = lines[len(lines)-1-len(evs) : len(lines)-1]
	for i, ev := range evs {
		var r wireRecord
		if _, err := fromEvent(ev, &r); err != nil {
			t.Fatal(err)
		}
		if r.textParts != nil {
			r.Text, r.textParts = strings.Join(r.textParts, ""), nil
		}
		var generic bytes.Buffer
		enc := json.NewEncoder(&generic)
		enc.SetEscapeHTML(false)
		var got wireRecord
		if err := json.Unmarshal(lines[i], &got); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		r.V, r.Seq, r.T = got.V, got.Seq, got.T
		if err := enc.Encode(&r); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(lines[i], generic.Bytes()) {
			t.Errorf("line %d differs from the generic encoding:\n got %.200s\nwant %.200s", i, lines[i], generic.Bytes())
		}
	}
	l, err := s.Load("s1")
	if err != nil {
		t.Fatal(err)
	}
	n := len(l.Events)
	if cp, ok := l.Events[n-3].(event.OutputCheckpoint); !ok || cp.Data != text {
		t.Errorf("the checkpoint of parts read back as %T %d bytes", l.Events[n-3], len(cp.Data))
	}
}

// Journaling a 2 MiB card output or a 2 MiB checkpoint given as its chunks
// costs no buffer of the line's size: the line is streamed from the text.
func TestBigRecordsAllocateLittle(t *testing.T) {
	chunk := strings.Repeat("printable output: the quick brown fox 0123456789\n", 1<<10)
	var parts []string
	for range 2 << 20 / len(chunk) {
		parts = append(parts, chunk)
	}
	card := strings.Join(parts, "")
	s, _ := newTestStore(t)
	j := mustCreate(t, s, "s1", "/w")
	mustAppend(t, j, event.UserPrompt{Text: "warm"})
	for _, ev := range []event.Event{
		event.OutputCheckpoint{ID: "c", Parts: parts},
		event.ToolResult{ID: "c", Name: "bash", Result: event.Result{Text: "ok", CardOutput: card}},
	} {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		mustAppend(t, j, ev)
		runtime.ReadMemStats(&m1)
		if got := m1.TotalAlloc - m0.TotalAlloc; got > 256<<10 {
			t.Errorf("%T of 2 MiB: %d bytes allocated", ev, got)
		}
	}
}
