package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// result is what one run produced.
type result struct {
	forwarded string     // the requests and notifications taken, canonical (see canon)
	replies   string     // what the connection wrote
	observed  []*Request // Preempt calls, in order
	runErr    error
}

// recorder is a Preempter that takes every message and answers nothing.
type recorder struct {
	mu   sync.Mutex
	seen []*Request
	take func(r *Request) bool // nil: take all
}

func (p *recorder) Preempt(r *Request) bool {
	p.mu.Lock()
	p.seen = append(p.seen, r)
	p.mu.Unlock()
	if p.take != nil {
		return p.take(r)
	}
	return true
}

// render is a message as canon writes it.
func render(method string, id, params json.RawMessage) string {
	return fmt.Sprintf("%s %s %s\n", method, id, params)
}

// canon renders a valid request or notification line as the harness
// records what the connection took: method, id and params.
func canon(line string) string {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		panic(err)
	}
	if string(m.ID) == "null" {
		m.ID = nil
	}
	return render(m.Method, m.ID, m.Params)
}

// runGuard runs a connection on input to EOF and collects everything it
// produced.
func runGuard(t *testing.T, input io.Reader, opts Options) result {
	t.Helper()
	var res result
	var replies bytes.Buffer
	rec := &recorder{}
	c := NewConn(input, NewOutput(&replies, nil), rec, opts)
	res.runErr = c.Run(context.Background())
	select {
	case <-c.Done():
	default:
		t.Fatal("Done not closed after Run returned")
	}
	res.observed = rec.seen
	for _, r := range rec.seen {
		res.forwarded += render(r.Method, r.ID, r.Params)
	}
	res.replies = replies.String()
	return res
}

func TestRejectedLines(t *testing.T) {
	const (
		parseErr = `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error","data":{"error":"invalid JSON"}}}`
		batch    = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request","data":{"error":"batch requests are not supported"}}}`
		notObj   = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request","data":{"error":"message must be a JSON object"}}}`
		badID    = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request","data":{"error":"id must be a string, a number or null"}}}`
	)
	tests := []struct {
		name, line, reply string
	}{
		{"truncated object", `{"jsonrpc":"2.0","id":1,"method":"x"`, parseErr},
		{"not json", `hello`, parseErr},
		{"trailing garbage", `{"jsonrpc":"2.0","id":1,"method":"x"} x`, parseErr},
		{"two objects", `{"jsonrpc":"2.0","method":"x"}{"jsonrpc":"2.0","method":"y"}`, parseErr},
		{"nul bytes", "\x00\x00", parseErr},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"initialize"}]`, batch},
		{"empty batch", `[]`, batch},
		{"malformed batch", `[{"jsonrpc":"2.0"`, parseErr},
		{"number", `42`, notObj},
		{"string", `"initialize"`, notObj},
		{"null", `null`, notObj},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"x"}`, badID},
		{"bool id", `{"jsonrpc":"2.0","id":true,"method":"x"}`, badID},
		{"array id", `{"jsonrpc":"2.0","id":[1],"method":"x"}`, badID},
		{"object id on a response", `{"jsonrpc":"2.0","id":{},"result":{}}`, badID},
		{"missing jsonrpc", `{"id":7,"method":"x"}`,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"Invalid request","data":{"error":"jsonrpc must be \"2.0\""}}}`},
		{"wrong jsonrpc", `{"jsonrpc":"1.0","id":"abc","method":"x"}`,
			`{"jsonrpc":"2.0","id":"abc","error":{"code":-32600,"message":"Invalid request","data":{"error":"jsonrpc must be \"2.0\""}}}`},
		{"numeric jsonrpc", `{"jsonrpc":2.0,"method":"x"}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request","data":{"error":"jsonrpc must be \"2.0\""}}}`},
		{"missing method", `{"jsonrpc":"2.0","id":3}`,
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"Invalid request","data":{"error":"missing method"}}}`},
		{"empty object", `{}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request","data":{"error":"missing method"}}}`},
		{"numeric method", `{"jsonrpc":"2.0","id":-2.5e3,"method":5}`,
			`{"jsonrpc":"2.0","id":-2.5e3,"error":{"code":-32600,"message":"Invalid request","data":{"error":"method must be a non-empty string"}}}`},
		{"empty method", `{"jsonrpc":"2.0","method":""}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request","data":{"error":"method must be a non-empty string"}}}`},
		{"null method", `{"jsonrpc":"2.0","id":"n","method":null}`,
			`{"jsonrpc":"2.0","id":"n","error":{"code":-32600,"message":"Invalid request","data":{"error":"method must be a non-empty string"}}}`},
		{"string params", `{"jsonrpc":"2.0","id":4,"method":"x","params":"p"}`,
			`{"jsonrpc":"2.0","id":4,"error":{"code":-32600,"message":"Invalid request","data":{"error":"params must be an object or an array"}}}`},
		{"numeric params", `{"jsonrpc":"2.0","method":"x","params":1}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request","data":{"error":"params must be an object or an array"}}}`},
		{"invalid UTF-8 id", "{\"jsonrpc\":\"2.0\",\"id\":\"a\xff\",\"method\":\"x\"}",
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request","data":{"error":"id must be valid UTF-8"}}}`},
		{"truncated UTF-8 id", "{\"jsonrpc\":\"2.0\",\"id\":\"\xe2\x82\",\"method\":\"x\",\"params\":{}}",
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request","data":{"error":"id must be valid UTF-8"}}}`},
		{"invalid UTF-8 id, no method", "{\"jsonrpc\":\"2.0\",\"id\":\"\xc0\"}",
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request","data":{"error":"missing method"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const next = `{"jsonrpc":"2.0","id":99,"method":"next"}`
			res := runGuard(t, strings.NewReader(tt.line+"\n"+next+"\n"), Options{})
			if res.replies != tt.reply+"\n" {
				t.Errorf("reply\n got %s\nwant %s", res.replies, tt.reply)
			}
			if res.forwarded != canon(next) {
				t.Errorf("forwarded %q, want only the next valid line", res.forwarded)
			}
			if len(res.observed) != 1 || res.observed[0].Method != "next" {
				t.Errorf("observed %+v, want only the next valid line", res.observed)
			}
		})
	}
}

func TestValidLinesForwardedUnchanged(t *testing.T) {
	tests := []struct {
		name, line     string
		method, id     string // id "" means nil
		params         string
		isNotification bool
		isResponse     bool
	}{
		{name: "request", line: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
			method: "initialize", id: "1", params: `{"protocolVersion":1}`},
		{name: "string id", line: `{"jsonrpc":"2.0","id":"a-1","method":"session/new","params":{}}`,
			method: "session/new", id: `"a-1"`, params: `{}`},
		{name: "fractional id", line: `{"jsonrpc":"2.0","id":1.5,"method":"m"}`, method: "m", id: "1.5"},
		{name: "notification", line: `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`,
			method: "session/cancel", params: `{"sessionId":"s"}`, isNotification: true},
		{name: "null id is a notification", line: `{"jsonrpc":"2.0","id":null,"method":"m"}`,
			method: "m", isNotification: true},
		{name: "null params", line: `{"jsonrpc":"2.0","id":2,"method":"m","params":null}`,
			method: "m", id: "2", params: "null"},
		{name: "array params", line: `{"jsonrpc":"2.0","id":2,"method":"m","params":[1,2]}`,
			method: "m", id: "2", params: "[1,2]"},
		{name: "padded", line: "  {\"jsonrpc\" : \"2.0\", \"id\" : 3 , \"method\":\"m\"}\t",
			method: "m", id: "3"},
		{name: "crlf", line: "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"m\"}\r", method: "m", id: "3"},
		{name: "result", line: `{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}`,
			id: "0", isResponse: true},
		{name: "null result", line: `{"jsonrpc":"2.0","id":"x","result":null}`, id: `"x"`, isResponse: true},
		{name: "error", line: `{"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"nope"}}`,
			id: "5", isResponse: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runGuard(t, strings.NewReader(tt.line+"\n"), Options{})
			if res.replies != "" {
				t.Errorf("unexpected reply %s", res.replies)
			}
			if tt.isResponse { // no request of the daemon's is pending: dropped
				if len(res.observed) != 0 {
					t.Errorf("a response reached the Preempter: %+v", res.observed)
				}
				return
			}
			if len(res.observed) != 1 {
				t.Fatalf("observed %d messages, want 1", len(res.observed))
			}
			m := res.observed[0]
			if m.Method != tt.method || string(m.ID) != tt.id || string(m.Params) != tt.params ||
				m.IsNotification() != tt.isNotification {
				t.Errorf("observed %+v (ID %s, Params %s)", m, m.ID, m.Params)
			}
		})
	}
}

func TestSkippedLines(t *testing.T) {
	tests := []struct{ name, input string }{
		{"empty lines", "\n\n\n"},
		{"white space", "   \n\t\r\n \v \n"},
		{"response without id", `{"jsonrpc":"2.0","result":1}` + "\n"},
		{"response with null id", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}` + "\n"},
		{"response with result and error", `{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"m"}}` + "\n"},
		{"response without jsonrpc", `{"id":1,"result":1}` + "\n"},
		{"response with an invalid UTF-8 id", "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"result\":1}\n"},
		{"nothing", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runGuard(t, strings.NewReader(tt.input), Options{})
			if res.forwarded != "" || res.replies != "" || len(res.observed) != 0 || res.runErr != nil {
				t.Errorf("got forwarded %q, replies %q, observed %d, err %v; want nothing",
					res.forwarded, res.replies, len(res.observed), res.runErr)
			}
		})
	}
}

func TestLastLineWithoutNewline(t *testing.T) {
	line := `{"jsonrpc":"2.0","id":1,"method":"m"}`
	res := runGuard(t, strings.NewReader(line), Options{})
	if res.forwarded != canon(line) {
		t.Errorf("forwarded %q, want %q", res.forwarded, canon(line))
	}
}

// request returns a request line of exactly n bytes (n >= 64).
func request(id, n int) string {
	head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"p":"`, id)
	const tail = `"}}`
	return head + strings.Repeat("a", n-len(head)-len(tail)) + tail
}

func TestOverLongLines(t *testing.T) {
	const limit = 200
	tooLong := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32600,"message":"Invalid request","data":{"error":"line too long","limit":200}}}` + "\n"
	}
	tests := []struct {
		name, line, reply string
	}{
		{"at the cap", request(1, limit), ""},
		{"one over the cap", request(1, limit+1), tooLong("1")},
		{"cr counts", request(1, limit) + "\r", tooLong("1")},
		{"far over the cap", request(123, 5000), tooLong("123")},
		{"string id", strings.Replace(request(1, 5000), `"id":1`, `"id":"q-1"`, 1), tooLong(`"q-1"`)},
		{"id after params", `{"jsonrpc":"2.0","method":"m","params":{"p":"` + strings.Repeat("b", 300) + `"},"id":4}`, tooLong("null")},
		{"response", `{"jsonrpc":"2.0","id":4,"result":{"p":"` + strings.Repeat("b", 300) + `"}}`, tooLong("null")},
		{"not json", strings.Repeat("x", 300), tooLong("null")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := request(2, 100)
			res := runGuard(t, strings.NewReader(tt.line+"\n"+next+"\n"), Options{MaxLine: limit})
			if res.replies != tt.reply {
				t.Errorf("reply\n got %s\nwant %s", res.replies, tt.reply)
			}
			want := canon(next)
			if tt.reply == "" {
				want = canon(tt.line) + want
			}
			if res.forwarded != want {
				t.Errorf("forwarded %d bytes, want %d", len(res.forwarded), len(want))
			}
		})
	}
}

func TestOverLongLineAtEOF(t *testing.T) {
	res := runGuard(t, strings.NewReader(request(9, 500)), Options{MaxLine: 100})
	if !strings.Contains(res.replies, `"id":9,`) || res.forwarded != "" || res.runErr != nil {
		t.Errorf("replies %q, forwarded %q, err %v", res.replies, res.forwarded, res.runErr)
	}
}

func TestRecoverID(t *testing.T) {
	tests := []struct{ prefix, want string }{
		{`{"jsonrpc":"2.0","id":12,"method":"m","params":{"x`, "12"},
		{`{"jsonrpc":"2.0","id":12`, ""}, // the number may go on
		{`{"jsonrpc":"2.0","id":12,`, ""},
		{`{"jsonrpc":"2.0","id":"ab`, ""},
		{`{"jsonrpc":"2.0","id":"ab","params":[`, `"ab"`},
		{`{"jsonrpc":"2.0","id":"a\u0062","method":"m"`, `"ab"`},
		{`{"jsonrpc":"2.0","method":"m","id":-3,"params":{`, "-3"},
		{`{"jsonrpc":"2.0","id":5,"result":{`, ""},
		{`{"jsonrpc":"2.0","id":5,"error":{`, ""},
		{`{"jsonrpc":"2.0","id":5,"x":{`, ""}, // no sign of a request
		{`{"jsonrpc":"2.0","id":null,"method":"m","params":{`, ""},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"m"`, ""},
		{`[{"id":1,"method":"m"`, ""},
		{`garbage`, ""},
	}
	for _, tt := range tests {
		if got := string(recoverID([]byte(tt.prefix))); got != tt.want {
			t.Errorf("recoverID(%s) = %q, want %q", tt.prefix, got, tt.want)
		}
	}
}

// patternReader yields n bytes of a repeated byte without holding them.
type patternReader struct {
	n int
	b byte
}

func (r *patternReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), r.n)
	for i := range p[:k] {
		p[i] = r.b
	}
	r.n -= k
	return k, nil
}

func TestOverLongLineMemoryBounded(t *testing.T) {
	const (
		limit = 1 << 20
		size  = 16 << 20
	)
	next := request(2, 100)
	input := io.MultiReader(
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"p":"`),
		&patternReader{n: size, b: 'a'},
		strings.NewReader(`"}}`+"\n"+next+"\n"),
	)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res := runGuard(t, input, Options{MaxLine: limit})
	runtime.ReadMemStats(&after)
	if !strings.Contains(res.replies, `"id":1,`) || !strings.Contains(res.replies, "line too long") {
		t.Errorf("reply %s", res.replies)
	}
	if res.forwarded != canon(next) {
		t.Errorf("forwarded %d bytes, want the next line only", len(res.forwarded))
	}
	// Buffering the line would take 16 MiB; the cap bounds the buffer to
	// 1 MiB, grown by doubling (~2 MiB allocated in all).
	alloc := after.TotalAlloc - before.TotalAlloc
	if alloc > 4<<20 {
		t.Errorf("allocated %d bytes for a %d-byte line with a %d-byte cap", alloc, size, limit)
	}
}

func TestMaxLineDefault(t *testing.T) {
	for _, in := range []int{0, -1} {
		if got := NewConn(strings.NewReader(""), NewOutput(io.Discard, nil), nil, Options{MaxLine: in}).MaxLine(); got != DefaultMaxLine {
			t.Errorf("MaxLine(%d) = %d, want %d", in, got, DefaultMaxLine)
		}
	}
	if got := NewConn(strings.NewReader(""), NewOutput(io.Discard, nil), nil, Options{MaxLine: 10}).MaxLine(); got != 10 {
		t.Errorf("MaxLine(10) = %d", got)
	}
}

// The Preempter sees every request and notification in wire order, each
// before the next line is read; responses never reach it.
func TestPreempterRunsInWireOrder(t *testing.T) {
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s"}}`,
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s"}}`,
		`{"jsonrpc":"2.0","id":0,"result":{}}`,
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`,
	}
	res := runGuard(t, strings.NewReader(strings.Join(lines, "\n")+"\n"), Options{})
	want := canon(lines[0]) + canon(lines[1]) + canon(lines[2]) + canon(lines[4])
	if res.forwarded != want {
		t.Errorf("preempted\n%s\nwant\n%s", res.forwarded, want)
	}
}

// blockingReader yields its lines, then blocks until closed.
func TestPreempterHoldsTheNextLine(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	in, inW := io.Pipe()
	rec := &recorder{take: func(*Request) bool {
		entered <- struct{}{}
		<-release
		return true
	}}
	c := NewConn(in, NewOutput(io.Discard, nil), rec, Options{})
	go func() { _ = c.Run(context.Background()) }()
	go func() {
		_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","method":"a"}`+"\n"+`{"jsonrpc":"2.0","method":"b"}`+"\n")
		_ = inW.Close()
	}()
	<-entered
	select {
	case <-entered:
		t.Fatal("the second line was taken while the Preempter held the first")
	default:
	}
	close(release)
	<-c.Done()
	if len(rec.seen) != 2 || rec.seen[1].Method != "b" {
		t.Errorf("seen %+v", rec.seen)
	}
}

// A Preempter's panic answers its request with -32603 and the connection
// keeps reading.
func TestPreempterPanicAnswersInternalError(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	var out bytes.Buffer
	n := 0
	rec := &recorder{take: func(*Request) bool {
		n++
		if n == 1 {
			panic("boom")
		}
		return true
	}}
	c := NewConn(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"m"}`+"\n"+`{"jsonrpc":"2.0","id":2,"method":"m"}`+"\n"),
		NewOutput(&out, nil), rec, Options{Logger: zap.New(core)})
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error","data":{"error":"internal error in m"}}}` + "\n"
	if out.String() != want {
		t.Errorf("wrote %q, want %q", out.String(), want)
	}
	if len(rec.seen) != 2 || logs.FilterMessage("rpc: preempter panicked").Len() != 1 {
		t.Errorf("seen %d, logs %v", len(rec.seen), logs.All())
	}
}

// Each request gets exactly one reply, whatever its id: a reused id is
// answered once per request, a second Reply writes nothing, and a handler
// that forgets to answer or panics still gets its request answered.
func TestExactlyOneReplyPerRequest(t *testing.T) {
	var out bytes.Buffer
	o := NewOutput(&out, nil)
	var wg sync.WaitGroup
	handler := func(r *Request) {
		defer wg.Done()
		switch string(r.Params) {
		case `{"do":"twice"}`:
			if !r.Reply("first", nil) || r.Reply("second", nil) {
				t.Error("Reply reported the wrong call as the reply")
			}
		case `{"do":"panic"}`:
			panic("boom")
		case `{"do":"forget"}`:
		}
	}
	input := `{"jsonrpc":"2.0","id":7,"method":"m","params":{"do":"twice"}}` + "\n" +
		`{"jsonrpc":"2.0","id":7,"method":"m","params":{"do":"twice"}}` + "\n" +
		`{"jsonrpc":"2.0","id":"p","method":"m","params":{"do":"panic"}}` + "\n" +
		`{"jsonrpc":"2.0","id":-1.5e3,"method":"m","params":{"do":"forget"}}` + "\n" +
		`{"jsonrpc":"2.0","method":"m","params":{"do":"twice"}}` + "\n"
	wg.Add(4)
	c := NewConn(strings.NewReader(input), o, nil, Options{Handler: handler})
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if n := c.Wait(ctx); n != 0 {
		t.Fatalf("%d requests unanswered", n)
	}
	wg.Wait()
	got := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m struct{ ID json.RawMessage }
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		got[string(m.ID)]++
	}
	want := map[string]int{"7": 2, `"p"`: 1, "-1.5e3": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("replies by id %v, want %v\n%s", got, want, out.String())
	}
	if strings.Count(out.String(), `"second"`) != 0 {
		t.Errorf("a second reply was written:\n%s", out.String())
	}
}

// $/cancel_request ends the context of the request it names.
func TestCancelRequestEndsTheRequestsContext(t *testing.T) {
	in, inW := io.Pipe()
	started := make(chan *Request, 1)
	c := NewConn(in, NewOutput(io.Discard, nil), nil, Options{Handler: func(r *Request) {
		started <- r
		<-r.Context().Done()
		r.Reply(nil, r.Context().Err())
	}})
	go func() { _ = c.Run(context.Background()) }()
	_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":"slow","method":"m"}`+"\n")
	r := <-started
	_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"slow"}}`+"\n")
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the request's context did not end")
	}
	_ = inW.Close()
}

// The daemon's own requests: Call writes the request and returns the
// client's answer; a response the calling connection could not decode is
// dropped without ending it; a stray response is dropped.
func TestCallRoundTrip(t *testing.T) {
	in, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := NewConn(in, NewOutput(outW, nil), nil, Options{})
	go func() { _ = c.Run(context.Background()) }()
	result := make(chan error, 1)
	var got struct{ Answer string }
	go func() { result <- c.Call(context.Background(), "ask", map[string]string{"q": "?"}, &got) }()
	sc := bufio.NewScanner(outR)
	if !sc.Scan() {
		t.Fatal("no request written")
	}
	var req struct {
		ID     json.RawMessage
		Method string
	}
	if err := json.Unmarshal(sc.Bytes(), &req); err != nil || req.Method != "ask" {
		t.Fatalf("request %q: %v", sc.Bytes(), err)
	}
	_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"error":{"code":"bad"}}`+"\n")
	_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":"stray","result":1}`+"\n")
	_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"answer":"yes"}}`+"\n")
	if err := <-result; err != nil || got.Answer != "yes" {
		t.Fatalf("Call = %v, %+v", err, got)
	}
	_ = inW.Close()
	<-c.Done()
	if err := c.Call(context.Background(), "ask", nil, nil); err == nil {
		t.Error("Call after the input ended succeeded")
	}
}

func TestEOFClosesDone(t *testing.T) {
	in, inW := io.Pipe()
	c := NewConn(in, NewOutput(io.Discard, nil), nil, Options{})
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(context.Background()) }()
	go func() {
		_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","method":"m"}`+"\n")
		_ = inW.Close()
	}()
	<-c.Done()
	if err := c.Err(); err != nil {
		t.Errorf("Err = %v after clean EOF", err)
	}
	if err := <-runErr; err != nil {
		t.Errorf("Run = %v", err)
	}
}

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }

func TestReadErrorPropagates(t *testing.T) {
	boom := errors.New("boom")
	c := NewConn(failingReader{boom}, NewOutput(io.Discard, nil), nil, Options{})
	if err := c.Run(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want %v", err, boom)
	}
	if !errors.Is(c.Err(), boom) {
		t.Errorf("Err = %v", c.Err())
	}
}

func TestCancelEndsRunWhileInputBlocks(t *testing.T) {
	in, inW := io.Pipe()
	c := NewConn(in, NewOutput(io.Discard, nil), nil, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()
	cancel()
	<-c.Done()      // closed although the input read is still blocked
	_ = inW.Close() // unblocks the read
	if err := <-runErr; !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
}

func TestLogsNeverHoldLineContent(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	input := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"text":"SECRET-1"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"x","params":"SECRET-2"}`,
		`{"SECRET-3`,
		`{"jsonrpc":"2.0","id":3,"method":"m","params":{"t":"SECRET-4` + strings.Repeat("s", 200) + `"}}`,
	}, "\n") + "\n"
	res := runGuard(t, strings.NewReader(input), Options{MaxLine: 150, Logger: zap.New(core)})
	if res.runErr != nil {
		t.Fatal(res.runErr)
	}
	if logs.Len() != 4 {
		t.Errorf("got %d log entries, want one per line: %v", logs.Len(), logs.All())
	}
	for _, e := range logs.All() {
		text := fmt.Sprint(e.Message, e.ContextMap())
		if strings.Contains(text, "SECRET") {
			t.Errorf("log entry holds line content: %s", text)
		}
	}
	first := logs.All()[0].ContextMap()
	if first["method"] != "session/prompt" || first["id"] != "1" || first["len"] != int64(len(strings.Split(input, "\n")[0])) {
		t.Errorf("first entry fields %v", first)
	}
}

// slowWriter writes one byte per underlying call and yields in between, so
// unsynchronized concurrent writers would interleave.
type slowWriter struct{ buf bytes.Buffer }

func (w *slowWriter) Write(p []byte) (int, error) {
	for i := range p {
		w.buf.WriteByte(p[i])
		runtime.Gosched()
	}
	return len(p), nil
}

func TestOutputNeverInterleaves(t *testing.T) {
	const writers, lines = 8, 50
	var sw slowWriter
	lw := NewOutput(&sw, nil).Writer()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range lines {
				line := fmt.Sprintf(`{"writer":%d,"line":%d,"pad":"%s"}`+"\n", w, i, strings.Repeat("x", 20+w))
				if _, err := lw.Write([]byte(line)); err != nil {
					t.Errorf("write: %v", err)
				}
			}
		})
	}
	wg.Wait()
	got := strings.Split(strings.TrimSuffix(sw.buf.String(), "\n"), "\n")
	if len(got) != writers*lines {
		t.Fatalf("got %d lines, want %d", len(got), writers*lines)
	}
	next := make([]int, writers)
	for _, l := range got {
		var v struct{ Writer, Line int }
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("interleaved line %q: %v", l, err)
		}
		if v.Line != next[v.Writer] {
			t.Fatalf("writer %d: line %d out of order", v.Writer, v.Line)
		}
		next[v.Writer]++
	}
}

// A pipe whose reader closes is reported without any write, once watched.
func TestOutputNoticesAHangUp(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	o := NewOutput(w, zap.NewNop())
	defer o.Close()
	o.Watch()
	select {
	case <-o.Broken():
		t.Fatal("broken while the reader is open")
	default:
	}
	r.Close()
	select {
	case <-o.Broken():
	case <-time.After(10 * time.Second):
		t.Fatal("the hang-up was not noticed")
	}
}

// A failed write marks the output broken.
func TestOutputBrokenOnAFailedWrite(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	o := NewOutput(w, nil)
	if err := o.Write([]byte("{}\n")); err == nil {
		t.Fatal("write to a closed pipe succeeded")
	}
	<-o.Broken()
	w.Close()
}
