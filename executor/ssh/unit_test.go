package ssh

import (
	"bufio"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor/sandbox"
)

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in   string
		want Target
		bad  string // substring of the error, "" when valid
	}{
		{in: "ssh://build1", want: Target{Host: "build1"}},
		{in: "ssh://me@build1:2222/srv/proj", want: Target{User: "me", Host: "build1", Port: 2222, Dir: "/srv/proj"}},
		{in: "ssh://[::1]:22/", want: Target{Host: "::1", Port: 22}},
		{in: "ssh://10.0.0.5/a%20b", want: Target{Host: "10.0.0.5", Dir: "/a b"}},
		{in: "build1", bad: "not an ssh://"},
		{in: "ssh://me:pw@build1", bad: "password"},
		{in: "ssh://build1:0", bad: "out of range"},
		{in: "ssh://build1:99999", bad: "out of range"},
		{in: "ssh://build1:", bad: "empty port"},
		{in: "ssh://build1/a/../b", bad: "not clean"},
		{in: "ssh://build1/?x=1", bad: "query"},
		{in: "ssh://build1/#f", bad: "fragment"},
		{in: "ssh://@build1", bad: "empty user"},
		{in: "ssh:///path", bad: "no host"},
	}
	for _, tc := range tests {
		got, err := ParseTarget(tc.in)
		if tc.bad != "" {
			if !errors.Is(err, ErrTarget) || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("ParseTarget(%q) = %+v, %v; want an error about %s", tc.in, got, err, tc.bad)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseTarget(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	if got := (Target{Host: "::1", Port: 2222}).Location("/p"); got != "[::1]:/p" {
		t.Errorf("Location = %q", got)
	}
}

// FuzzParseTarget: any input either fails with ErrTarget or gives a target
// that prints back to an address parsing to the same target.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"ssh://build1", "ssh://me@h:22/x", "ssh://[::1]/", "ssh://a b", "ssh://h/%2e%2e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tg, err := ParseTarget(s)
		if err != nil {
			if !errors.Is(err, ErrTarget) {
				t.Fatalf("error %v does not wrap ErrTarget", err)
			}
			return
		}
		if tg.Host == "" || tg.Port < 0 || tg.Port > 65535 || (tg.Dir != "" && tg.Dir[0] != '/') {
			t.Fatalf("bad target %+v from %q", tg, s)
		}
		again, err := ParseTarget(tg.String())
		if err != nil || again != tg {
			t.Fatalf("%q → %+v → %q → %+v, %v", s, tg, tg.String(), again, err)
		}
	})
}

// checkQuote asks the real bash what sandbox.Quote(s) means.
func checkQuote(t *testing.T, s string) {
	t.Helper()
	q := sandbox.Quote(s)
	if strings.ContainsAny(q, "\n\r") {
		t.Fatalf("sandbox.Quote(%q) = %q spans lines", s, q)
	}
	out, err := exec.Command("bash", "-c", "printf %s "+q).Output()
	if err != nil || string(out) != s {
		t.Fatalf("bash reads sandbox.Quote(%q) = %q as %q (%v)", s, q, out, err)
	}
}

func TestQuote(t *testing.T) {
	for _, s := range []string{"", "plain", "it's", `back\slash`, "new\nline", "tab\there", "$HOME `x` $(y)", "\x01\x7f", "héllo", "\xff\xfe", "a'\\'b", "\\x41"} {
		checkQuote(t, s)
	}
}

func FuzzQuote(f *testing.F) {
	for _, s := range []string{"it's", "a\nb", "\\", "\x00x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.ContainsRune(s, 0) {
			return // no bash word holds a NUL; Spawn refuses them
		}
		checkQuote(t, s)
	})
}

func TestHeaderSkipsLoginNoise(t *testing.T) {
	const m = "dsh-acp-x"
	r := bufio.NewReader(strings.NewReader("welcome!\nmotd " + m + " ok 1\n" + m + " ok 42\ncommand output"))
	line, err := header(r, m)
	rest, _ := io.ReadAll(r)
	if err != nil || line != "ok 42" || string(rest) != "command output" {
		t.Errorf("header = %q, %v; rest %q", line, err, rest)
	}
	if _, err := header(bufio.NewReader(strings.NewReader("no marker\n")), m); !errors.Is(err, io.EOF) {
		t.Errorf("no header: %v", err)
	}
	if _, err := header(bufio.NewReader(strings.NewReader(strings.Repeat("noise\n", noiseLimit))), m); err == nil {
		t.Error("endless noise: no error")
	}
}

func TestSkipTo(t *testing.T) {
	tests := []struct{ in, want string }{
		{"rc noise\nM\nreal stderr", "real stderr"},
		{"M\n", ""},
		{"no marker at all", "no marker at all"},
		{strings.Repeat("x", noiseLimit+10) + "M\nafter", strings.Repeat("x", noiseLimit+10) + "M\nafter"},
	}
	for _, tc := range tests {
		got, err := io.ReadAll(&skipTo{r: iotestHalf(strings.NewReader(tc.in)), marker: []byte("M\n")})
		if err != nil || string(got) != tc.want {
			t.Errorf("skipTo(%.20q) = %.20q, %v; want %.20q", tc.in, got, err, tc.want)
		}
	}
}

// iotestHalf returns a reader delivering a few bytes per Read.
func iotestHalf(r io.Reader) io.Reader { return &smallReads{r} }

type smallReads struct{ r io.Reader }

func (s *smallReads) Read(p []byte) (int, error) {
	if len(p) > 3 {
		p = p[:3]
	}
	return s.r.Read(p)
}

func TestPreludeIsOneLine(t *testing.T) {
	l := &launch{marker: newMarker(), script: "x", stdin: []byte("in"), dir: "/a\nb", unset: []string{"SECRET"},
		envUnset: []string{"a/b"}, export: []string{"A=multi\nline"}, registry: "/tmp/r"}
	for _, inline := range []bool{false, true} {
		p := l.prelude(inline)
		if strings.ContainsAny(p, "\n\r") {
			t.Errorf("prelude (inline %v) spans lines (the command's $LINENO would be off):\n%s", inline, p)
		}
		if out, err := exec.Command("bash", "-n", "-c", p).CombinedOutput(); err != nil {
			t.Errorf("prelude (inline %v) does not parse: %v %s", inline, err, out)
		}
	}
	if l.inline(true) {
		t.Error("a launch with Spec.Stdin inline")
	}
	short := &launch{script: "x", export: []string{"PAGER=cat"}}
	if !short.inline(true) || short.inline(false) {
		t.Error("a short script without stdin is inline exactly when the login shell is bash")
	}
	short.private = true
	if short.inline(true) {
		t.Error("Spec.Env went on the command line")
	}
}

func TestSupervisorPreludeParses(t *testing.T) {
	p := supervisorPrelude("/tmp/it's", 2*time.Second)
	if out, err := exec.Command("bash", "-n", "-c", p).CombinedOutput(); err != nil {
		t.Errorf("supervisor prelude does not parse: %v %s\n%s", err, out, p)
	}
}
