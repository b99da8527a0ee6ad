package tools

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/executorfake"
)

// filterAll runs s through a fresh filter in the given pieces.
func filterAll(pieces ...string) string {
	var f stringFilter
	var out strings.Builder
	for _, p := range pieces {
		out.Write(f.filter([]byte(p)))
	}
	return out.String()
}

func TestStringFilter(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain text untouched", "hello\nworld\n", "hello\nworld\n"},
		{"SGR colours kept", "\x1b[1;31merror\x1b[0m: x", "\x1b[1;31merror\x1b[0m: x"},
		{"cursor CSI kept", "a\x1b[2K\x1b[1Gb", "a\x1b[2K\x1b[1Gb"},
		{"charset escape kept", "\x1b(Bx", "\x1b(Bx"},
		{"OSC 52 clipboard, BEL", "a\x1b]52;c;ZXZpbA==\x07b", "ab"},
		{"OSC 52 clipboard, ST", "a\x1b]52;c;ZXZpbA==\x1b\\b", "ab"},
		{"OSC 8 hyperlink keeps its text", "\x1b]8;;http://evil/\x1b\\click\x1b]8;;\x1b\\ here", "click here"},
		{"title", "\x1b]0;pwned\x07\x1b]2;again\x07ok", "ok"},
		{"palette change", "\x1b]4;1;rgb:ff/00/00\x07ok", "ok"},
		{"DCS tmux passthrough", "\x1bPtmux;\x1b\x1b]52;c;eA==\x07\x1b\\ok", "ok"},
		{"APC, PM, SOS", "\x1b_apc\x1b\\\x1b^pm\x1b\\\x1bXsos\x1b\\ok", "ok"},
		{"C1 OSC to C1 ST", "a\u009d52;c;eA==\u009cb", "ab"},
		{"C1 DCS", "a\u0090q#0\u009cb", "ab"},
		{"CAN aborts", "a\x1b]0;t\x18b", "ab"},
		{"an ESC ends the string and starts the next sequence", "\x1b]0;t\x1b[31mred", "\x1b[31mred"},
		{"unterminated at the end", "ok\x1b]52;c;eA==", "ok"},
		{"lone ESC at the end held", "ok\x1b", "ok"},
		{"ESC ESC: the first one dropped", "\x1b\x1b[31mx", "\x1b[31mx"},
		{"ESC then a control dropped", "a\x1b\nb", "a\nb"},
		{"Latin-1 text untouched", "café © 10°", "café © 10°"},
		{"other C1 untouched", "a\u0085b", "a\u0085b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := filterAll(tt.in); got != tt.want {
				t.Errorf("filter(%q) = %q, want %q", tt.in, got, tt.want)
			}
			// Split at every character boundary: the same result.
			for i := 1; i < len(tt.in); i++ {
				if !utf8.RuneStart(tt.in[i]) {
					continue
				}
				if got := filterAll(tt.in[:i], tt.in[i:]); got != tt.want {
					t.Errorf("split at %d: filter(%q, %q) = %q, want %q", i, tt.in[:i], tt.in[i:], got, tt.want)
				}
			}
		})
	}
}

// What the filter removes never lets what is left start a sequence.
func TestStringFilterRemovalCannotJoinAnIntroducer(t *testing.T) {
	for _, in := range []string{
		"\x1b\x1b]0;t\x07]52;c;eA==\x07",    // an ESC before a removed OSC, "]" after it
		"\x1b\u009d0;t\u009c]52;c;eA==\x07", // the same with a C1 OSC
		"\x1b\x1bPx\x1b\\]52;c;eA==\x07",    // the same with a DCS
		"\xc2\x1b]0;t\x07\x9d52;c;eA==\x07", // halves of U+009D around a removed OSC
	} {
		clean := strings.ToValidUTF8(in, "\uFFFD")
		if got := filterAll(clean); hasIntroducer(got) {
			t.Errorf("filter(%q) = %q: a sequence starts in what is left", in, got)
		}
	}
}

func hasIntroducer(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == 0x1b && isStringIntroducer(s[i+1]) || s[i] == 0xc2 && isC1String(s[i+1]) {
			return true
		}
	}
	return false
}

func FuzzStringFilter(f *testing.F) {
	f.Add("\x1b]52;c;eA==\x07\x1b[31mred\x1b\x1b]x", 3)
	f.Add("\u009d8;;u\u009clink", 1)
	f.Add("\x1b[31mred\x1b[0m \x1b(B\x1b=", 2)
	f.Fuzz(func(t *testing.T, s string, cut int) {
		s = strings.ToValidUTF8(s, "\uFFFD")
		whole := filterAll(s)
		if hasIntroducer(whole) || !utf8.ValidString(whole) {
			t.Fatalf("filter(%q) = %q", s, whole)
		}
		if slow := string((&stringFilter{}).strip([]byte(s))); slow != whole {
			t.Fatalf("the fast path gives %q, the slow one %q", whole, slow)
		}
		if again := filterAll(whole); again != whole {
			t.Fatalf("filter is not idempotent: %q then %q", whole, again)
		}
		if len(s) == 0 {
			return
		}
		i := (cut%len(s) + len(s)) % len(s)
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		if got := filterAll(s[:i], s[i:]); got != whole {
			t.Fatalf("split at %d: %q, whole: %q", i, got, whole)
		}
	})
}

// The card never receives a string sequence, also when one is split
// across chunks and streams interleave; colours reach it.
func TestCardStreamStripsStringSequences(t *testing.T) {
	var streamed strings.Builder
	c := newCardStream(1<<20, func(s string) { streamed.WriteString(s) })
	for _, ch := range []executor.Chunk{
		{Stream: executor.Stdout, Data: []byte("\x1b[32mok\x1b[0m \x1b]5")},
		{Stream: executor.Stderr, Data: []byte("err\x1b")},
		{Stream: executor.Stdout, Data: []byte("2;c;ZXZpbA==\x1b")},
		{Stream: executor.Stderr, Data: []byte("]0;title\x07 more\n")},
		{Stream: executor.Stdout, Data: []byte("\\\xc2")},
		{Stream: executor.Stdout, Data: []byte("\x9d8;;http://x\xc2\x9clink\n")},
	} {
		c.observe(ch)
	}
	out := c.close("", "")
	want := "\x1b[32mok\x1b[0m err more\nlink\n"
	if out != want || streamed.String() != out {
		t.Errorf("card output %q (streamed %q), want %q", out, streamed.String(), want)
	}
}

// A capped card's tail is the end of the executor's combined tail, from a
// line start, and says how much comes before it.
func TestCardTail(t *testing.T) {
	var all strings.Builder
	for i := range 20000 {
		all.WriteString(strings.Repeat("x", i%7) + "\n")
	}
	all.WriteString("the last line\n")
	combined := []byte(all.String()[all.Len()-50000:]) // the executor keeps a tail too
	tail, cut := cardTail(combined, int64(all.Len()))
	if len(tail) > cardTailBytes || !strings.HasSuffix(all.String(), tail) || !strings.HasSuffix(tail, "the last line\n") {
		t.Fatalf("tail of %d bytes ends %q", len(tail), tail[max(0, len(tail)-40):])
	}
	if i := all.Len() - len(tail); all.String()[i-1] != '\n' || cut != int64(i) {
		t.Errorf("tail starts mid-line or cut %d, want %d", cut, i)
	}
	if tail, cut := cardTail([]byte("short\nend\n"), 10); tail != "short\nend\n" || cut != 0 {
		t.Errorf("a whole output's tail %q, cut %d", tail, cut)
	}
}

// bash records the tail only when the card's cap cut the output short.
func TestBashCardTailOnlyPastTheCap(t *testing.T) {
	for _, tt := range []struct {
		limit int
		want  bool
	}{{1 << 20, false}, {1000, true}} {
		out := strings.Repeat("0123456789\n", 1000) + "end\n"
		f := executorfake.New()
		f.Chunks = []executor.Chunk{{Stream: executor.Stdout, Data: []byte(out)}}
		f.Result = executor.Result{Stdout: []byte(out), Combined: []byte(out)}
		bash, _ := NewBash(f, Config{CardOutputLimit: tt.limit}).Lookup(BashName)
		o := OutcomeOf(bash.Run(context.Background(), Call{Args: []byte(`{"command":"x"}`), Output: func(string) {}}))
		if got := o.CardTail != ""; got != tt.want || (got && (!strings.HasSuffix(o.CardTail, "9\nend\n") || o.CardTailCut != int64(len(out)-len(o.CardTail)))) {
			t.Errorf("card limit %d: tail %d bytes, cut %d", tt.limit, len(o.CardTail), o.CardTailCut)
		}
	}
}

// Whole-text stripping matches the stream's, and changes nothing the
// stream produced.
func TestStripStringSequences(t *testing.T) {
	in := "a\x1b]52;c;eA==\x07b\x1b[31mc\xc2\x9d0;t\xc2\x9cd\xff"
	want := "ab\x1b[31mcd\uFFFD"
	if got := StripStringSequences(in); got != want {
		t.Errorf("StripStringSequences(%q) = %q, want %q", in, got, want)
	}
	if got := StripStringSequences(want); got != want {
		t.Errorf("not idempotent: %q", got)
	}
	plain := "café\n"
	if got := StripStringSequences(plain); got != plain {
		t.Errorf("plain text changed: %q", got)
	}
}
