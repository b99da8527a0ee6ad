package tools

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/executor"
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
