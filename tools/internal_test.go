package tools

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/event"
)

func TestCardStreamIgnoresChunksAfterClose(t *testing.T) {
	var streamed strings.Builder
	c := newCardStream(100, func(s string) { streamed.WriteString(s) })
	c.observe(executor.Chunk{Stream: executor.Stdout, Data: []byte("before\n")})
	got := c.close("", "")
	c.observe(executor.Chunk{Stream: executor.Stdout, Data: []byte("late\n")})
	if got != "before\n" || c.close("", "") != got || streamed.String() != got {
		t.Errorf("close = %q, second close %q, streamed %q", got, c.close("", ""), streamed.String())
	}
}

func TestCardStreamConcurrentLateChunks(t *testing.T) {
	c := newCardStream(1<<20, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 1000 {
			c.observe(executor.Chunk{Stream: executor.Stderr, Data: []byte("x")})
		}
	}()
	out := c.close("", "")
	<-done
	if c.close("", "") != out {
		t.Error("output changed after close")
	}
}

// FuzzCleanAndCap checks the model-text invariants on arbitrary output:
// clean text is valid UTF-8 without escapes, CRs or other controls, and an
// assembled text stays within its cap whenever the markers fit.
func FuzzCleanAndCap(f *testing.F) {
	f.Add("\x1b[31mred\x1b[0m\r\nx\r50%\r100%\b\x00", "err\xff", 40)
	f.Add("héllo ✓", "", 5)
	f.Fuzz(func(t *testing.T, out, errOut string, limit int) {
		clean := CleanTerminalText(out)
		if !utf8.ValidString(clean) {
			t.Fatalf("invalid UTF-8: %q", clean)
		}
		for _, r := range clean {
			if r != '\n' && r != '\t' && isControl(r) {
				t.Fatalf("control %U left in %q", r, clean)
			}
		}
		limit = limit % 5000
		marker := func(bool) []string { return []string{"[exit code: 1]"} }
		text, _ := assemble(limit, clean, CleanTerminalText(errOut), marker)
		if n := utf8.RuneCountInString(text); limit >= 200 && n > limit {
			t.Fatalf("text has %d runes, limit %d", n, limit)
		}
		if !strings.HasSuffix(text, "[exit code: 1]") {
			t.Fatalf("marker lost: %q", text)
		}
	})
}

// Past the card cap the stream copies nothing: a command printing a
// gigabyte costs the card its cap, not the gigabyte.
func TestCardStreamCopiesNothingPastTheCap(t *testing.T) {
	var forwarded int
	c := newCardStream(1000, func(s string) { forwarded += len(s) })
	chunk := executor.Chunk{Stream: executor.Stdout, Data: make([]byte, 64<<10)}
	c.observe(chunk) // reaches the cap
	if forwarded != 1000 {
		t.Fatalf("forwarded %d bytes, want the cap (1000)", forwarded)
	}
	allocs := testing.AllocsPerRun(100, func() { c.observe(chunk) })
	if allocs != 0 {
		t.Errorf("a chunk past the cap allocated %v times, want 0", allocs)
	}
	out := c.close("", "")
	want := fmt.Sprintf("[… %d bytes not shown]", 101*len(chunk.Data)+len(chunk.Data)-1000)
	if !strings.Contains(out, want) {
		t.Errorf("card output ends %q, want %q", out[max(0, len(out)-60):], want)
	}
}

// The chunk that reaches the cap is copied only up to the cap.
func TestCardStreamCopiesTheCappingChunkOnlyToTheCap(t *testing.T) {
	c := newCardStream(1000, nil)
	chunk := executor.Chunk{Stream: executor.Stdout, Data: []byte(strings.Repeat("é", 1<<20))} // 2 MiB
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	c.observe(chunk)
	runtime.ReadMemStats(&ms1)
	if copied := ms1.TotalAlloc - ms0.TotalAlloc; copied > 64<<10 {
		t.Errorf("capping a 2 MiB chunk at 1000 bytes allocated %d bytes", copied)
	}
	if out := c.close("", ""); !strings.HasPrefix(out, strings.Repeat("é", 500)+"\n[… ") {
		t.Errorf("card output starts %q", out[:min(len(out), 40)])
	}
}

// Streaming a card's worth of output copies each byte once: into the card
// output, whose views are what the card receives.
func TestCardStreamCopiesEachByteOnce(t *testing.T) {
	const limit = 1 << 20
	var forwarded []string
	c := newCardStream(limit, func(s string) { forwarded = append(forwarded, s) })
	chunk := executor.Chunk{Stream: executor.Stdout, Data: []byte(strings.Repeat("0123456789abcde\n", 4096))} // 64 KiB
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for range limit / len(chunk.Data) {
		c.observe(chunk)
	}
	out := c.close("", "")
	runtime.ReadMemStats(&m1)
	if len(out) != limit || strings.Join(forwarded, "") != out {
		t.Fatalf("card output of %d bytes; the forwarded pieces add up to it: %v", len(out), strings.Join(forwarded, "") == out)
	}
	if got := m1.TotalAlloc - m0.TotalAlloc; got > limit+256<<10 {
		t.Errorf("streaming %d bytes allocated %d", limit, got)
	}
}

// A card at its default cap, with the not-shown line naming a long spill
// path and a dropped line, still fits in what the journal keeps
// (event.MaxCardOutput): the journal keeps it whole, without a copy.
func TestCardFitsTheJournal(t *testing.T) {
	c := newCardStream(DefaultCardOutputLimit, nil)
	c.observe(executor.Chunk{Stream: executor.Stdout, Data: []byte("start\n")})
	c.observe(executor.Chunk{Stream: executor.Stdout, Data: []byte("after a gap\n"), Dropped: 123456789})
	line := []byte(strings.Repeat("printable output 0123456789\n", 1<<10))
	for range 3 * event.MaxCardOutput / len(line) {
		c.observe(executor.Chunk{Stream: executor.Stdout, Data: line})
	}
	out := c.close("/home/someone/.local/state/dsh-acp/spill/o-"+strings.Repeat("s", 64)+"/run-12-0123456789abcdef.log", "")
	if len(out) > event.MaxCardOutput || !strings.Contains(out, "bytes not shown; full output: ") {
		t.Errorf("card output of %d bytes (max %d), ends %q", len(out), event.MaxCardOutput, out[max(0, len(out)-200):])
	}
}

// cleanLineRunes is cleanLine's earlier form, on runes: the reference.
func cleanLineRunes(line string) string {
	if strings.Contains(line, "\r") {
		segs := strings.Split(line, "\r")
		line = ""
		for j := len(segs) - 1; j >= 0; j-- {
			if segs[j] != "" {
				line = segs[j]
				break
			}
		}
	}
	out := []rune{}
	for _, r := range line {
		switch {
		case r == '\b':
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		case r == '\t' || !isControl(r):
			out = append(out, r)
		}
	}
	return string(out)
}

func FuzzCleanLineMatchesRunes(f *testing.F) {
	for _, s := range []string{"a\bb", "é\b\bx", "\x00\x01ok\x7f", "\u0085\u009fé€😀\b", "a\rb\r", "\t\b\b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		s = strings.ToValidUTF8(s, "\uFFFD")
		for _, line := range strings.Split(s, "\n") {
			if got, want := cleanLine(line), cleanLineRunes(line); got != want {
				t.Fatalf("cleanLine(%q) = %q, want %q", line, got, want)
			}
		}
	})
}

// Cleaning a megabyte of control bytes (a command printing /dev/zero)
// costs about the text's size, not four times it.
func TestCleanTerminalTextAllocatesTheTextOnce(t *testing.T) {
	nul := strings.Repeat("\x00", 1<<20)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	out := CleanTerminalText(nul)
	runtime.ReadMemStats(&m1)
	if got := m1.TotalAlloc - m0.TotalAlloc; out != "" || got > 1<<20+64<<10 {
		t.Errorf("cleaning 1 MiB of NULs gave %d bytes and allocated %d", len(out), got)
	}
}

func TestShortDuration(t *testing.T) {
	for ms, want := range map[int64]string{120000: "2m", 5400000: "1h30m", 3600000: "1h", 90000: "1m30s", 1500: "1.5s", 500: "500ms", 1000: "1s"} {
		if got := shortDuration(ms); got != want {
			t.Errorf("shortDuration(%d) = %q, want %q", ms, got, want)
		}
	}
}
