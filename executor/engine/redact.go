package engine

import (
	"bytes"
	"slices"
	"strings"

	"github.com/dsh-acp/dsh-acp/executor"
)

// Secret is a value the engine redacts from every command's output: the
// value of a variable let through the credential scrub (--allow-env
// GH_TOKEN), the daemon's own API key. Every occurrence becomes
// "[redacted: <Name>]".
type Secret struct {
	Name  string
	Value string
}

// MinSecretLen is the shortest value redacted: a shorter one ("1", "true",
// a port) would match ordinary output far too often to be worth it, and
// says little about the secret.
const MinSecretLen = 6

// Label is the text that replaces a secret named name.
func Label(name string) string { return "[redacted: " + name + "]" }

// AllowedSecrets returns the variables of env ("NAME=value") that only the
// allow list let through ScrubEnv, as secrets to redact: those named in
// allow whose name or value the scrub would otherwise have dropped.
// Variables allowed that the scrub passes anyway (--allow-env HOME) are not
// secrets. The order is env's.
func AllowedSecrets(env, allow []string) []Secret {
	var out []Secret
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" || !slices.Contains(allow, name) || !(deniedName(name) || deniedValue(value)) {
			continue
		}
		out = append(out, Secret{Name: name, Value: value})
	}
	return out
}

// redactor replaces secrets in output. At each position the leftmost
// occurrence of any secret wins, and of the secrets that start there the
// longest; the scan goes on after it. A nil *redactor redacts nothing.
type redactor struct {
	pats   []pattern
	maxLen int
}

type pattern struct {
	value, label []byte
}

// newRedactor returns the redactor for secrets, or nil when none is long
// enough (MinSecretLen) to redact. A value given twice keeps its first name.
func newRedactor(secrets []Secret) *redactor {
	r := &redactor{}
	seen := map[string]bool{}
	for _, s := range secrets {
		if len(s.Value) < MinSecretLen || seen[s.Value] {
			continue
		}
		seen[s.Value] = true
		r.pats = append(r.pats, pattern{value: []byte(s.Value), label: []byte(Label(s.Name))})
		r.maxLen = max(r.maxLen, len(s.Value))
	}
	if len(r.pats) == 0 {
		return nil
	}
	return r
}

// redact appends buf, redacted, to dst. Unless final, it stops at the
// first position from which buf's tail could still grow into a secret (a
// proper prefix of one), and returns where that held-back tail starts
// (len(buf) when nothing is held). The tail is never longer than the
// longest secret less one byte.
func (r *redactor) redact(dst, buf []byte, final bool) (out []byte, held int) {
	next := make([]int, len(r.pats)) // next occurrence of each secret; -1 none, -2 unknown
	for k := range next {
		next[k] = -2
	}
	for i := 0; ; {
		j, best := -1, -1
		for k, p := range r.pats {
			if next[k] != -1 && next[k] < i {
				next[k] = indexFrom(buf, i, p.value)
			}
			if n := next[k]; n >= 0 && (j < 0 || n < j || n == j && len(p.value) > len(r.pats[best].value)) {
				j, best = n, k
			}
		}
		if !final {
			// A secret starting at q < j would win once complete; one
			// longer than the match at q == j too: wait for more output.
			if q := r.partialStart(buf, i); q >= 0 && (j < 0 || q <= j) {
				return append(dst, buf[i:q]...), q
			}
		}
		if j < 0 {
			return append(dst, buf[i:]...), len(buf)
		}
		dst = append(append(dst, buf[i:j]...), r.pats[best].label...)
		i = j + len(r.pats[best].value)
	}
}

// partialStart is the first q >= from such that buf[q:] is a proper prefix
// of a secret, or -1.
func (r *redactor) partialStart(buf []byte, from int) int {
	for q := max(from, len(buf)-r.maxLen+1); q < len(buf); q++ {
		tail := buf[q:]
		for _, p := range r.pats {
			if len(p.value) > len(tail) && bytes.HasPrefix(p.value, tail) {
				return q
			}
		}
	}
	return -1
}

func indexFrom(buf []byte, from int, v []byte) int {
	if k := bytes.Index(buf[from:], v); k >= 0 {
		return from + k
	}
	return -1
}

// redactStream redacts one output stream as it arrives, holding back only
// a tail that could still become a secret. It is used by one goroutine.
type redactStream struct {
	r        *redactor
	held, in []byte
	out      []byte // reused: valid until the next call
}

// write returns p redacted, less a held-back tail, plus what was held
// before and is now known not to be a secret.
func (s *redactStream) write(p []byte) []byte {
	in := p
	if len(s.held) > 0 {
		s.in = append(append(s.in[:0], s.held...), p...)
		in = s.in
	}
	var h int
	s.out, h = s.r.redact(s.out[:0], in, false)
	s.held = append(s.held[:0], in[h:]...)
	return s.out
}

// flush returns the held-back tail, redacted: the stream ended.
func (s *redactStream) flush() []byte {
	s.out, _ = s.r.redact(s.out[:0], s.held, true)
	s.held = s.held[:0]
	return s.out
}

// redactSink redacts each stream before it reaches next. Each stream's
// state is used only by that stream's pump.
type redactSink struct {
	next     sink
	out, err redactStream
}

func newRedactSink(r *redactor, next sink) sink {
	if r == nil {
		return next
	}
	return &redactSink{next: next, out: redactStream{r: r}, err: redactStream{r: r}}
}

func (s *redactSink) stream(st executor.Stream) *redactStream {
	if st == executor.Stderr {
		return &s.err
	}
	return &s.out
}

func (s *redactSink) write(st executor.Stream, p []byte) {
	if out := s.stream(st).write(p); len(out) > 0 {
		s.next.write(st, out)
	}
}

// flush passes on st's held-back tail; the pump calls it at EOF.
func (s *redactSink) flush(st executor.Stream) {
	if out := s.stream(st).flush(); len(out) > 0 {
		s.next.write(st, out)
	}
}

// flusher is a sink that holds output back until the stream ends.
type flusher interface {
	flush(st executor.Stream)
}
