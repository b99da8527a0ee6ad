package engine

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
)

// batch redacts s in one go.
func batch(r *redactor, s string) string {
	out, _ := r.redact(nil, []byte(s), true)
	return string(out)
}

// streamed redacts s fed in the given pieces, then flushes.
func streamed(r *redactor, pieces ...string) string {
	rs := redactStream{r: r}
	var out []byte
	for _, p := range pieces {
		out = append(out, rs.write([]byte(p))...)
	}
	return string(append(out, rs.flush()...))
}

func TestRedactRules(t *testing.T) {
	secrets := []Secret{
		{Name: "GH_TOKEN", Value: "ghp_0123456789abcdef"},
		{Name: "SHORT", Value: "abc12"},          // under MinSecretLen: kept
		{Name: "ONE", Value: "secret-one"},       // a prefix of TWO
		{Name: "TWO", Value: "secret-one-two"},   // longer: wins where both start
		{Name: "LEFT", Value: "overlap-AAAA"},    // overlaps RIGHT
		{Name: "RIGHT", Value: "AAAA-overlap-z"}, // starts inside LEFT
		{Name: "AGAIN", Value: "ghp_0123456789abcdef"},
	}
	r := newRedactor(secrets)
	tests := []struct{ in, want string }{
		{"no secret here\n", "no secret here\n"},
		{"token=ghp_0123456789abcdef\n", "token=[redacted: GH_TOKEN]\n"},
		{"ghp_0123456789abcdefghp_0123456789abcdef", "[redacted: GH_TOKEN][redacted: GH_TOKEN]"},
		{"abc12 stays", "abc12 stays"},
		{"secret-one-two!", "[redacted: TWO]!"},
		{"secret-one-tw", "[redacted: ONE]-tw"},
		{"secret-one", "[redacted: ONE]"},
		{"x overlap-AAAA-overlap-z y", "x [redacted: LEFT]-overlap-z y"},
		{"x AAAA-overlap-z y", "x [redacted: RIGHT] y"},
		{"ghp_0123456789abcde", "ghp_0123456789abcde"}, // one byte short
	}
	for _, tc := range tests {
		if got := batch(r, tc.in); got != tc.want {
			t.Errorf("redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
		// Split at every offset, and fed a byte at a time: the same.
		for i := 0; i <= len(tc.in); i++ {
			if got := streamed(r, tc.in[:i], tc.in[i:]); got != tc.want {
				t.Errorf("split at %d of %q: %q, want %q", i, tc.in, got, tc.want)
			}
		}
		if got := streamed(r, strings.Split(tc.in, "")...); got != tc.want {
			t.Errorf("byte by byte %q: %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Output is held back only while it could still become a secret, and
// never more than the longest secret less one byte.
func TestRedactHoldsBackOnlyWhatItMust(t *testing.T) {
	r := newRedactor([]Secret{{Name: "K", Value: "0123456789"}, {Name: "L", Value: "abcdef"}})
	rs := redactStream{r: r}
	for _, tc := range []struct{ in, out string }{
		{"hello\n", "hello\n"},
		{"x0123", "x"},     // "0123" may grow into K
		{"45z", "012345z"}, // it did not
		{"abc", ""},        // may be L
		{"de", ""},         // still may
		{"f and 012345678", "[redacted: L] and "},
		{"9", "[redacted: K]"},
	} {
		if got := string(rs.write([]byte(tc.in))); got != tc.out {
			t.Errorf("write(%q) passed %q on, want %q (held %q)", tc.in, got, tc.out, rs.held)
		}
		if len(rs.held) > r.maxLen-1 {
			t.Errorf("held %d bytes, more than %d", len(rs.held), r.maxLen-1)
		}
	}
	rs.write([]byte("tail 01234"))
	if got := string(rs.flush()); got != "01234" {
		t.Errorf("flush = %q, want the held tail", got)
	}
}

func TestNoRedactorWithoutLongSecrets(t *testing.T) {
	if r := newRedactor([]Secret{{Name: "A", Value: "12345"}, {Name: "B", Value: ""}}); r != nil {
		t.Errorf("redactor for short values: %+v", r)
	}
	var next captureSink
	if s := newRedactSink(nil, &next); s != sink(&next) {
		t.Error("a nil redactor wraps the sink")
	}
}

type captureSink struct{ bytes.Buffer }

func (c *captureSink) write(_ executor.Stream, p []byte) { c.Write(p) }

func TestAllowedSecrets(t *testing.T) {
	env := []string{"GH_TOKEN=ghp_abcdefghijklmnopqrstuv", "HOME=/home/u", "NPM_TOKEN=npm-secret", "OTHER_TOKEN=x123456", "PLAIN=sk-abcdefghijklmnopqrstuvwx"}
	got := AllowedSecrets(env, []string{"GH_TOKEN", "HOME", "NPM_TOKEN", "PLAIN"})
	want := []Secret{{"GH_TOKEN", "ghp_abcdefghijklmnopqrstuv"}, {"NPM_TOKEN", "npm-secret"}, {"PLAIN", "sk-abcdefghijklmnopqrstuvwx"}}
	if len(got) != len(want) {
		t.Fatalf("AllowedSecrets = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("AllowedSecrets[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}

// Every output path of a real command carries the redaction: the live
// chunks, the foreground result's streams, a task's reads and the spill
// file, with the value split across two pipe reads.
func TestEngineRedactsEveryPath(t *testing.T) {
	const value = "ghp_SPLITACROSSCHUNKS0123456789"
	const label = "[redacted: GH_TOKEN]"
	e := newTestExecutor(t, Config{StateDir: t.TempDir(), SpillAfter: 1024, CaptureBytes: 64 << 10,
		Redact:  []Secret{{Name: "GH_TOKEN", Value: value}},
		BaseEnv: []string{"PATH=/usr/bin:/bin", "V=" + value}})
	cmd := `printf '%s' "${V:0:9}"; sleep 0.2; printf '%s\n' "${V:9}"; printf '%s' "${V:0:4}" >&2; sleep 0.1; printf '%s\n' "${V:4}" >&2; head -c 2000 /dev/zero | tr '\0' x; printf '\n%s\n' "$V"`
	var live bytes.Buffer
	res, err := e.Run(context.Background(), resolve(t, e, cmd), func(c executor.Chunk) { live.Write(c.Data) })
	if err != nil {
		t.Fatal(err)
	}
	check := func(what, text string, labels int) {
		t.Helper()
		if strings.Contains(text, value) || strings.Contains(text, value[:9]+value[9:]) {
			t.Errorf("%s carries the secret: %q", what, text)
		}
		if n := strings.Count(text, label); n != labels {
			t.Errorf("%s has %d labels, want %d: %q", what, n, labels, text)
		}
	}
	check("live output", live.String(), 3)
	check("stdout", string(res.Stdout), 2)
	check("stderr", string(res.Stderr), 1)
	check("combined", string(res.Combined), 3)
	if res.SpillPath == "" {
		t.Fatal("no spill file")
	}
	spill, err := os.ReadFile(res.SpillPath)
	if err != nil {
		t.Fatal(err)
	}
	check("spill file", string(spill), 3)

	id, err := e.Start(resolve(t, e, `printf '%s' "${V:0:20}"; sleep 0.2; printf '%s\n' "${V:20}"`))
	if err != nil {
		t.Fatal(err)
	}
	var read strings.Builder
	deadline := time.Now().Add(10 * time.Second)
	for {
		rr, err := e.Read(id, "")
		if err != nil {
			t.Fatal(err)
		}
		read.Write(rr.Output)
		if rr.Status != executor.Running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("task did not finish")
		}
		time.Sleep(20 * time.Millisecond)
	}
	check("task reads", read.String(), 1)
}

// FuzzRedactStreamed: however output is cut into chunks, streaming gives
// what one pass over the whole gives, holds back less than the longest
// secret, and no secret survives (one of letters and digits only, not
// itself part of a label such as "redacted").
func FuzzRedactStreamed(f *testing.F) {
	f.Add("say ghp_abcdef123 and abcdef", "ghp_abcdef123", "abcdef123x", uint64(0x1234))
	f.Add("aaaaaaab", "aaaab", "aaaaaab", uint64(7))
	f.Fuzz(func(t *testing.T, text, s1, s2 string, cuts uint64) {
		r := newRedactor([]Secret{{Name: "A", Value: s1}, {Name: "B", Value: s2}})
		if r == nil {
			return
		}
		want := batch(r, text)
		var pieces []string
		for rest := text; rest != ""; cuts >>= 3 {
			n := min(len(rest), int(cuts&7)+1)
			pieces, rest = append(pieces, rest[:n]), rest[n:]
		}
		rs := redactStream{r: r}
		var out []byte
		for _, p := range pieces {
			out = append(out, rs.write([]byte(p))...)
			if len(rs.held) >= r.maxLen {
				t.Fatalf("held %d bytes, longest secret %d", len(rs.held), r.maxLen)
			}
		}
		out = append(out, rs.flush()...)
		if string(out) != want {
			t.Fatalf("streamed %q, whole %q", out, want)
		}
		for _, p := range r.pats {
			if alnum(p.value) && !bytes.Contains([]byte(Label("A")+Label("B")), p.value) && bytes.Contains(out, p.value) {
				t.Fatalf("%q survives in %q", p.value, out)
			}
		}
	})
}

func alnum(b []byte) bool {
	for _, c := range b {
		if !isAlnum(c) {
			return false
		}
	}
	return true
}

// BenchmarkRedactStream measures redaction of 64 KiB pipe reads of
// ordinary output (numbered lines of x runs) against two token-like
// 40-byte secrets, and against a secret that output resembles everywhere
// (40 x's: every x run is a partial match).
func BenchmarkRedactStream(b *testing.B) {
	var text bytes.Buffer
	for i := 0; text.Len() < 64<<10; i++ {
		text.WriteString(strings.Repeat("x", i%50) + " line\n")
	}
	chunk := text.Bytes()[:64<<10]
	tokens := []Secret{{Name: "A", Value: "ghp_" + strings.Repeat("a", 36)}, {Name: "B", Value: "sk-" + strings.Repeat("b", 37)}}
	for _, bc := range []struct {
		name    string
		secrets []Secret
	}{
		{"tokens", tokens},
		{"lookalike", append(tokens, Secret{Name: "C", Value: strings.Repeat("x", 40)})},
	} {
		b.Run(bc.name, func(b *testing.B) {
			rs := redactStream{r: newRedactor(bc.secrets)}
			b.SetBytes(int64(len(chunk)))
			for range b.N {
				rs.write(chunk)
			}
		})
	}
}
