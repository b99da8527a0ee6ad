package replay

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

func TestGenerateJournal(t *testing.T) {
	var buf bytes.Buffer
	if err := GenerateJournal(&buf, 10, "gen-1", "/w"); err != nil {
		t.Fatal(err)
	}
	l, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Warnings) != 0 || l.Header.ID != "gen-1" || l.Header.Cwd != "/w" {
		t.Errorf("header %+v, warnings %q", l.Header, l.Warnings)
	}
	// prompt + 10 × (assistant, call, result) + final message + turn end
	if len(l.Events) != 1+30+2 || l.LastSeq != 34 {
		t.Errorf("%d events, last seq %d", len(l.Events), l.LastSeq)
	}
	res := l.Events[3].(event.ToolResult)
	if n := len(res.Result.CardOutput); n < 200 || n > 1000 {
		t.Errorf("generated output of %d bytes", n)
	}
	if got := Settle(l.Events); len(got) != len(l.Events) {
		t.Errorf("a generated journal has open calls")
	}
	if err := GenerateJournal(&buf, 1, "../x", "/w"); err == nil {
		t.Error("GenerateJournal accepted a bad id")
	}
}

// generated writes a journal of calls tool calls to a temporary file.
func generated(b *testing.B, calls int) (path string, size int64) {
	b.Helper()
	path = filepath.Join(b.TempDir(), "gen.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := GenerateJournal(f, calls, "gen-1", "/w"); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return path, fi.Size()
}

// BenchmarkLoad10k reads and decodes a journal of 10 000 tool calls (each an
// assistant message, a tool call and a result with a few hundred bytes of
// output): 30 003 records.
func BenchmarkLoad10k(b *testing.B) {
	path, size := generated(b, 10_000)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		l, err := LoadFile(path)
		if err != nil || len(l.Events) != 30_003 {
			b.Fatal(err)
		}
	}
}

// BenchmarkFirstRecord10k is how soon a streamed replay has its first
// event from the same journal.
func BenchmarkFirstRecord10k(b *testing.B) {
	path, _ := generated(b, 10_000)
	stop := bytes.ErrTooLarge // any sentinel
	for b.Loop() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		_, err = Scan(f, func(r Record) error {
			if r.Event != nil {
				return stop
			}
			return nil
		})
		f.Close()
		if err != stop {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppend is the cost of journaling one tool result (no fsync).
func BenchmarkAppend(b *testing.B) {
	s, err := OpenStore(b.TempDir(), WithClock(func() time.Time { return time.Unix(0, 0) }))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	j, err := s.Create("bench", "/w", "v")
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	var buf bytes.Buffer
	if err := GenerateJournal(&buf, 1, "x", "/w"); err != nil {
		b.Fatal(err)
	}
	l, err := Read(&buf)
	if err != nil {
		b.Fatal(err)
	}
	ev := l.Events[3]
	b.ReportAllocs()
	for b.Loop() {
		if err := j.Append(ev); err != nil {
			b.Fatal(err)
		}
	}
}
