package acp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"
)

// blockedReader never yields: the SDK behind it sees no line at all.
type blockedReader struct{ done <-chan struct{} }

func (r blockedReader) Read([]byte) (int, error) {
	<-r.done
	return 0, io.EOF
}

// Who may answer initialize in initializeReply.
type answerer int

const (
	daemon       answerer = iota // as served: the observer, else the SDK
	sdkOnly                      // the SDK alone
	observerOnly                 // the observer alone: the SDK reads nothing at all
)

// initializeReply serves one line on cfg and returns the first line
// written back.
func initializeReply(t *testing.T, cfg Config, line string, by answerer) string {
	t.Helper()
	done := make(chan struct{})
	defer close(done)
	h := hooks{sdkInitialize: by == sdkOnly}
	if by == observerOnly {
		h.sdkInput = func(io.Reader) io.Reader { return blockedReader{done} }
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- serve(context.Background(), inR, outW, cfg, h)
		outW.Close()
	}()
	lines := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(outR).ReadString('\n')
		lines <- l
		_, _ = io.Copy(io.Discard, outR)
	}()
	if _, err := io.WriteString(inW, line+"\n"); err != nil {
		t.Fatal(err)
	}
	var reply string
	select {
	case reply = <-lines:
	case <-time.After(20 * time.Second):
		t.Fatalf("no reply to %s (answerer %d)", line, by)
	}
	inW.Close()
	if err := <-served; err != nil && !errors.Is(err, io.ErrClosedPipe) {
		t.Fatal(err)
	}
	return reply
}

// The guard's observer answers initialize itself, with the line the SDK
// writes for it, byte for byte, for every variant of the reply: with and
// without login, logout and the older terminal-auth descriptor, any
// protocol version, string and number ids. A request it does not take
// (an id or a version string that needs escaping, params the SDK rejects)
// is still answered, by the SDK.
func TestInitializeAnsweredAsTheSDKWould(t *testing.T) {
	base := localConfig(t)
	base.Version = "0.1.0-dev"
	configs := map[string]Config{"no login": base}
	login := base
	login.Auth = &AuthConfig{}
	configs["login"] = login
	full := base
	full.Name, full.Version = "dsh-acp", "v1.2.3 (abc1234, 2026-01-02)"
	full.Auth = &AuthConfig{Logout: func() error { return nil }, Command: "/usr/local/bin/dsh-acp"}
	configs["login, logout, command"] = full

	params := []string{
		`{}`,
		`{"protocolVersion":1}`,
		`{"protocolVersion":0}`,
		`{"protocolVersion":7,"clientInfo":{"name":"zed","version":"1"}}`,
		`{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true,"_meta":{"terminal_output":true}}}`,
		`{"protocolVersion":1,"clientCapabilities":{"auth":{"terminal":true}}}`,
		`{"protocolVersion":1,"clientCapabilities":{"_meta":{"terminal-auth":true}}}`,
		`{"protocolVersion":1,"clientCapabilities":{"auth":{"terminal":true},"_meta":{"terminal-auth":true,"terminal_output":true}}}`,
	}
	ids := []string{`1`, `0`, `"init-1"`, `-3`}
	for name, cfg := range configs {
		for _, p := range params {
			for _, id := range ids {
				line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"initialize","params":%s}`, id, p)
				want := initializeReply(t, cfg, line, sdkOnly)
				if got := initializeReply(t, cfg, line, observerOnly); got != want {
					t.Errorf("%s, %s:\nobserver %s\nSDK      %s", name, line, got, want)
				}
			}
		}
	}

	// Not taken: the SDK answers, as before.
	odd := full
	odd.Version = "1.0 <beta>"
	for _, tc := range []struct {
		cfg  Config
		line string
	}{
		{full, `{"jsonrpc":"2.0","id":"<id>","method":"initialize","params":{"protocolVersion":1}}`},
		{odd, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`},
		{full, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"one"}}`},
	} {
		want := initializeReply(t, tc.cfg, tc.line, sdkOnly)
		if got := initializeReply(t, tc.cfg, tc.line, daemon); got != want || want == "" {
			t.Errorf("%s: daemon %q, SDK %q", tc.line, got, want)
		}
	}
}

// The observer answers initialize only when its own encoder can write the
// reply exactly; plainJSON and plainID are what it checks.
func TestPlainJSON(t *testing.T) {
	for s, want := range map[string]bool{
		"dsh-acp": true, "v1.2.3 (abc, 2026-01-02)": true, "/usr/bin/x": true, "": true,
		`a"b`: false, `a\b`: false, "<": false, ">": false, "&": false, "é": false, "a\nb": false, "\x7f": false,
	} {
		if got := plainJSON(s); got != want {
			t.Errorf("plainJSON(%q) = %v", s, got)
		}
	}
	for id, want := range map[string]bool{
		`1`: true, `-12`: true, `1.5e3`: true, `"abc-1"`: true, `"a<b"`: false, `"a\"b"`: false, `""`: true, ``: false, `null`: false,
	} {
		if got := plainID([]byte(id)); got != want {
			t.Errorf("plainID(%s) = %v", id, got)
		}
	}
}
