package llm_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/llm"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

// roundTrips counts the HTTP requests a client tried to send.
type roundTrips struct {
	n  atomic.Int32
	rt http.RoundTripper
}

func (c *roundTrips) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(r)
}

// closedPort is an address nothing listens on: a port this test opened and
// closed.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// unknownHostTransport fails every dial the way net/http's dialer does for
// a name the resolver does not know, without depending on the machine's DNS.
func unknownHostTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = func(_ context.Context, network, addr string) (net.Conn, error) {
		host, _, _ := net.SplitHostPort(addr)
		return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{
			Err: "no such host", Name: host, Server: "127.0.0.53:53", IsNotFound: true}}
	}
	return tr
}

// Failures a retry cannot fix fail at once: one attempt (none for a bad
// base URL), no retry announced, a message naming the URL and the cause.
// The client keeps its real one-second backoff, so a retry would also show
// in the time taken.
func TestPermanentFailuresFailAtOnce(t *testing.T) {
	refused := closedPort(t)
	tlsSrv := httptest.NewUnstartedServer(http.NotFoundHandler())
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake failure is the point
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	tests := []struct {
		name      string
		base      func(srv *llmtest.Server) string
		transport http.RoundTripper
		script    []llmtest.Response
		wantKind  error
		wantText  string // with SRV standing for the fake's address
		trips     int32  // HTTP requests tried
	}{
		{
			name:     "connection refused",
			base:     func(*llmtest.Server) string { return "http://" + refused },
			wantKind: llm.ErrConnection,
			wantText: "the connection to the model provider failed: connection refused: nothing is listening at " +
				refused + " (POST http://" + refused + "/chat/completions)",
			trips: 1,
		},
		{
			name:      "unknown host",
			base:      func(*llmtest.Server) string { return "https://api.deepsek.invalid" },
			transport: unknownHostTransport(),
			wantKind:  llm.ErrConnection,
			wantText: `the connection to the model provider failed: the host name "api.deepsek.invalid" could not be resolved ` +
				"(no such host) (POST https://api.deepsek.invalid/chat/completions)",
			trips: 1,
		},
		{
			name:     "no scheme",
			base:     func(*llmtest.Server) string { return "api.deepseek.com" },
			wantKind: llm.ErrBaseURL,
			wantText: `the model provider's base URL is invalid: "api.deepseek.com" has no scheme; write "https://api.deepseek.com"`,
		},
		{
			name:     "mistyped scheme",
			base:     func(*llmtest.Server) string { return "htp://api.deepseek.com" },
			wantKind: llm.ErrBaseURL,
			wantText: `the model provider's base URL is invalid: "htp://api.deepseek.com" has the unknown scheme "htp"; ` +
				"use https:// (or http:// for a local server)",
		},
		{
			name:     "https to a plain-HTTP server",
			base:     func(srv *llmtest.Server) string { return strings.Replace(srv.URL(), "http://", "https://", 1) },
			wantKind: llm.ErrConnection,
			wantText: "the connection to the model provider failed: the server does not speak TLS; if it is a plain-HTTP " +
				"server, write http:// in the base URL (POST https://SRV/chat/completions)",
			trips: 1,
		},
		{
			name:     "untrusted TLS certificate",
			base:     func(*llmtest.Server) string { return tlsSrv.URL },
			wantKind: llm.ErrConnection,
			wantText: "the server's TLS certificate is not trusted",
			trips:    1,
		},
		{
			name:     "501",
			script:   []llmtest.Response{llmtest.Status(501)},
			wantKind: llm.ErrEndpoint,
			wantText: "the base URL does not point at an OpenAI-compatible API (HTTP 501): Not Implemented (POST http://SRV/chat/completions)",
			trips:    1,
		},
		{
			name:     "401",
			script:   []llmtest.Response{llmtest.Error(401, "Authentication Fails, your api key: "+testKey+" is invalid")},
			wantKind: llm.ErrAuth,
			wantText: "the model provider rejected the API key (HTTP 401): Authentication Fails, your api key: [redacted] is invalid " +
				"(POST http://SRV/chat/completions)",
			trips: 1,
		},
		{
			name:     "404 for the path",
			script:   []llmtest.Response{llmtest.Status(404)},
			wantKind: llm.ErrEndpoint,
			wantText: "OpenAI-compatible API (HTTP 404): Not Found",
			trips:    1,
		},
		{
			name:     "404 for the model",
			script:   []llmtest.Response{llmtest.Error(404, "The model `gpt-9` does not exist")},
			wantKind: llm.ErrRequest,
			wantText: "refused the request (HTTP 404): The model `gpt-9` does not exist",
			trips:    1,
		},
		{
			name:     "422",
			script:   []llmtest.Response{llmtest.Error(422, "messages: field required")},
			wantKind: llm.ErrRequest,
			wantText: "refused the request (HTTP 422): messages: field required",
			trips:    1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t, tt.script...)
			base := srv.URL()
			if tt.base != nil {
				base = tt.base(srv)
			}
			rt := tt.transport
			if rt == nil {
				rt = http.DefaultTransport.(*http.Transport).Clone()
			}
			trips := &roundTrips{rt: rt}
			c := llm.New(llm.Config{BaseURL: base, APIKey: testKey, HTTPClient: &http.Client{Transport: trips}})
			req := simpleRequest()
			var retries []llm.RetryInfo
			req.OnRetry = func(r llm.RetryInfo) { retries = append(retries, r) }

			start := time.Now()
			_, err := c.Stream(t.Context(), req, nil)
			took := time.Since(start)

			if !errors.Is(err, tt.wantKind) || !errors.Is(err, llm.ErrPermanent) {
				t.Fatalf("err = %v, want kind %v and permanent", err, tt.wantKind)
			}
			var e *llm.Error
			if !errors.As(err, &e) || e.Retryable() {
				t.Errorf("err %T retryable", err)
			}
			want := strings.ReplaceAll(tt.wantText, "SRV", strings.TrimPrefix(srv.URL(), "http://"))
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error\n%s\ndoes not contain\n%s", err, want)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("error leaks the API key: %q", err)
			}
			if n := trips.n.Load(); n != tt.trips {
				t.Errorf("%d HTTP requests tried, want %d (no retry)", n, tt.trips)
			}
			if len(retries) != 0 {
				t.Errorf("retries announced: %v", retries)
			}
			if took >= time.Second { // sanity only: a retry waits the 1 s backoff
				t.Errorf("took %v", took)
			}
		})
	}
}

// A bad base URL is known when the client is built, and ListModels fails
// the same way.
func TestBadBaseURLReportedByErr(t *testing.T) {
	c := llm.New(llm.Config{BaseURL: "localhost:8080", APIKey: testKey})
	want := `the model provider's base URL is invalid: "localhost:8080" has no scheme; write "http://localhost:8080"`
	if err := c.Err(); err == nil || err.Error() != want {
		t.Fatalf("Err() = %v, want %s", err, want)
	}
	if _, err := c.ListModels(t.Context()); !errors.Is(err, llm.ErrBaseURL) {
		t.Errorf("ListModels: %v", err)
	}
	if err := llm.New(llm.Config{APIKey: testKey}).Err(); err != nil {
		t.Errorf("default base URL: %v", err)
	}
}

func TestValidateBaseURL(t *testing.T) {
	tests := []struct{ raw, want string }{
		{"https://api.deepseek.com", ""},
		{"http://127.0.0.1:8080/v1", ""},
		{"HTTPS://api.openai.com/v1/", ""},
		{"", "it is empty"},
		{"api.deepseek.com", `"api.deepseek.com" has no scheme; write "https://api.deepseek.com"`},
		{"127.0.0.1:11434/v1", `"127.0.0.1:11434/v1" has no scheme; write "http://127.0.0.1:11434/v1"`},
		{"localhost:8080", `"localhost:8080" has no scheme; write "http://localhost:8080"`},
		{"htp://api.deepseek.com", `"htp://api.deepseek.com" has the unknown scheme "htp"; use https:// (or http:// for a local server)`},
		{"ftp://x", `"ftp://x" has the unknown scheme "ftp"; use https:// (or http:// for a local server)`},
		{"https://", `"https://" has no host`},
		{"https://:8080", `"https://:8080" has no host`},
		{"https://api.deepseek.com ", `"https://api.deepseek.com " contains white space`},
		{"https://api.deepseek.com/chat/completions", `"https://api.deepseek.com/chat/completions" is the chat endpoint, ` +
			`not the API root; write "https://api.deepseek.com"`},
		{"http://x:99999999999", `"http://x:99999999999" has the invalid port 99999999999`},
		{"http://x:0", `"http://x:0" has the invalid port 0`},
		{"https://h/v1?api-key=" + testKey, `"https://h/v1" has a query or fragment (left out here); the base URL is the API root only`},
		{"https://h/#x", `"https://h/" has a query or fragment (left out here); the base URL is the API root only`},
		{"https://user:secret@host", ""},
		{"htp://user:secret@host", `"htp://user:xxxxx@host" has the unknown scheme "htp"; use https:// (or http:// for a local server)`},
	}
	for _, tt := range tests {
		err := llm.ValidateBaseURL(tt.raw)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("ValidateBaseURL(%q) = %v", tt.raw, err)
		case tt.want != "" && (err == nil || !errors.Is(err, llm.ErrBaseURL) ||
			err.Error() != "the model provider's base URL is invalid: "+tt.want):
			t.Errorf("ValidateBaseURL(%q) = %v,\nwant %s", tt.raw, err, tt.want)
		}
	}
}

// A key in the base URL (user info or query) stays out of the error.
func TestKeyInBaseURLIsScrubbed(t *testing.T) {
	srv := llmtest.New(t, llmtest.Error(401, "nope"))
	tests := []struct {
		base string
		kind error
	}{
		{strings.Replace(srv.URL(), "http://", "http://"+testKey+":"+testKey+"@", 1), llm.ErrAuth},
		{srv.URL() + "/?api-key=" + testKey, llm.ErrBaseURL},
		{"htp://" + testKey + "@x", llm.ErrBaseURL},
	}
	for _, tt := range tests {
		c := llm.New(llm.Config{BaseURL: tt.base, APIKey: testKey})
		_, err := c.Stream(t.Context(), simpleRequest(), nil)
		if !errors.Is(err, tt.kind) || strings.Contains(err.Error(), testKey) {
			t.Errorf("base %q: err = %v", tt.base, err)
		}
	}
}
