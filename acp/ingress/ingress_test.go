package ingress

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// result is what one guarded run produced.
type result struct {
	forwarded string    // what the SDK side read
	replies   string    // the Guard's error replies
	observed  []Message // Observe calls, in order
	runErr    error
}

// runGuard guards input to EOF and collects everything the Guard produced.
func runGuard(t *testing.T, input io.Reader, opts Options) result {
	t.Helper()
	var res result
	var replies bytes.Buffer
	decide := opts.Observe
	opts.Observe = func(m Message) Verdict {
		res.observed = append(res.observed, m)
		if decide != nil {
			return decide(m)
		}
		return Verdict{}
	}
	g := New(input, NewLockedWriter(&replies), opts)
	fwd := make(chan string, 1)
	go func() {
		b, err := io.ReadAll(g.Reader())
		if err != nil {
			t.Errorf("read forwarded: %v", err)
		}
		fwd <- string(b)
	}()
	res.runErr = g.Run(context.Background())
	res.forwarded = <-fwd
	res.replies = replies.String()
	select {
	case <-g.Done():
	default:
		t.Fatal("Done not closed after Run returned")
	}
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
			if res.forwarded != next+"\n" {
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
			if res.forwarded != tt.line+"\n" {
				t.Errorf("forwarded %q, want %q", res.forwarded, tt.line+"\n")
			}
			if res.replies != "" {
				t.Errorf("unexpected reply %s", res.replies)
			}
			if len(res.observed) != 1 {
				t.Fatalf("observed %d messages, want 1", len(res.observed))
			}
			m := res.observed[0]
			if m.Method != tt.method || string(m.ID) != tt.id || string(m.Params) != tt.params ||
				m.Len != len(tt.line) || m.IsNotification() != tt.isNotification || m.IsResponse() != tt.isResponse {
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
	if res.forwarded != line+"\n" {
		t.Errorf("forwarded %q, want %q", res.forwarded, line+"\n")
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
			want := next + "\n"
			if tt.reply == "" {
				want = tt.line + "\n" + want
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
	if res.forwarded != next+"\n" {
		t.Errorf("forwarded %d bytes, want the next line only", len(res.forwarded))
	}
	// Buffering the line would take 16 MiB; the cap bounds the buffer to
	// 1 MiB, grown by doubling (~2 MiB allocated in all).
	alloc := after.TotalAlloc - before.TotalAlloc
	if alloc > 4<<20 {
		t.Errorf("allocated %d bytes for a %d-byte line with a %d-byte cap", alloc, size, limit)
	}
}

func TestMaxLineClampedToSDK(t *testing.T) {
	for _, in := range []int{0, -1, 64 << 20, SDKMaxLine + 1} {
		if got := New(strings.NewReader(""), io.Discard, Options{MaxLine: in}).MaxLine(); got != SDKMaxLine {
			t.Errorf("MaxLine(%d) = %d, want %d", in, got, SDKMaxLine)
		}
	}
	if got := New(strings.NewReader(""), io.Discard, Options{MaxLine: 10}).MaxLine(); got != 10 {
		t.Errorf("MaxLine(10) = %d", got)
	}
}

// orderLog records events from the Guard's and the reader's goroutines.
type orderLog struct {
	mu     sync.Mutex
	events []string
}

func (l *orderLog) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, fmt.Sprintf(format, args...))
}

func (l *orderLog) index(event string) int {
	for i, e := range l.events {
		if e == event {
			return i
		}
	}
	return -1
}

func TestObserverRunsInWireOrderBeforeForwarding(t *testing.T) {
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s"}}`,
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s"}}`,
		`{"jsonrpc":"2.0","id":0,"result":{}}`,
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`,
	}
	var log orderLog
	g := New(strings.NewReader(strings.Join(lines, "\n")+"\n"), io.Discard, Options{
		Observe: func(m Message) Verdict {
			log.add("observe %d start", m.Len)
			log.add("observe %s %s end", m.Method, m.ID)
			return Verdict{}
		},
	})
	readDone := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(g.Reader())
		for i := 0; sc.Scan(); i++ {
			log.add("forward %d", i)
		}
		readDone <- sc.Err()
	}()
	if err := g.Run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := <-readDone; err != nil {
		t.Fatalf("reader: %v", err)
	}
	for i, line := range lines {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		end := log.index(fmt.Sprintf("observe %s %s end", m.Method, m.ID))
		fwd := log.index(fmt.Sprintf("forward %d", i))
		if end < 0 || fwd < 0 || end > fwd {
			t.Errorf("line %d: observer end at %d, forward at %d; want observe before forward", i, end, fwd)
		}
		if i > 0 {
			if prev := log.index(fmt.Sprintf("forward %d", i-1)); prev > fwd {
				t.Errorf("line %d forwarded before line %d", i, i-1)
			}
		}
	}
	var observed []string
	for _, e := range log.events {
		if strings.HasSuffix(e, " end") {
			observed = append(observed, e)
		}
	}
	want := []string{
		"observe session/prompt 1 end", "observe session/cancel  end", "observe session/prompt 2 end",
		"observe  0 end", "observe session/cancel  end",
	}
	if strings.Join(observed, "|") != strings.Join(want, "|") {
		t.Errorf("observed\n %q\nwant\n %q", observed, want)
	}
}

func TestObserverBlocksForwarding(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	line := `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}` + "\n"
	g := New(strings.NewReader(line), io.Discard, Options{Observe: func(Message) Verdict {
		close(entered)
		<-release
		return Verdict{}
	}})
	go func() { _ = g.Run(context.Background()) }()
	<-entered
	got := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(g.Reader())
		got <- string(b)
	}()
	// The observer holds the line: nothing can have been forwarded yet.
	select {
	case s := <-got:
		t.Fatalf("forwarded %q while the observer ran", s)
	default:
	}
	close(release)
	if s := <-got; s != line {
		t.Errorf("forwarded %q, want %q", s, line)
	}
}

func TestObserverPanicStillForwards(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	line := `{"jsonrpc":"2.0","id":1,"method":"m"}`
	var replies bytes.Buffer
	g := New(strings.NewReader(line+"\n"), &replies, Options{
		Observe: func(Message) Verdict { panic("boom") },
		Logger:  zap.New(core),
	})
	fwd := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(g.Reader())
		fwd <- b
	}()
	if err := g.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := string(<-fwd); got != line+"\n" {
		t.Errorf("forwarded %q", got)
	}
	if logs.FilterMessage("ingress: observer panicked").Len() != 1 {
		t.Errorf("panic not logged: %v", logs.All())
	}
}

func TestEOFClosesReaderAndDone(t *testing.T) {
	in, inW := io.Pipe()
	g := New(in, io.Discard, Options{})
	runErr := make(chan error, 1)
	go func() { runErr <- g.Run(context.Background()) }()
	line := `{"jsonrpc":"2.0","method":"m"}` + "\n"
	go func() {
		_, _ = io.WriteString(inW, line)
		_ = inW.Close()
	}()
	b, err := io.ReadAll(g.Reader()) // returns at the Guard's EOF
	if err != nil || string(b) != line {
		t.Fatalf("ReadAll = %q, %v", b, err)
	}
	<-g.Done()
	if err := g.Err(); err != nil {
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
	g := New(failingReader{boom}, io.Discard, Options{})
	if err := g.Run(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want %v", err, boom)
	}
	if _, err := g.Reader().Read(make([]byte, 1)); !errors.Is(err, boom) {
		t.Errorf("Reader error %v, want %v", err, boom)
	}
	if !errors.Is(g.Err(), boom) {
		t.Errorf("Err = %v", g.Err())
	}
}

func TestCancelClosesReaderWhileInputBlocks(t *testing.T) {
	in, inW := io.Pipe()
	g := New(in, io.Discard, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- g.Run(ctx) }()
	cancel()
	<-g.Done() // closed although the input read is still blocked
	if _, err := g.Reader().Read(make([]byte, 1)); !errors.Is(err, context.Canceled) {
		t.Errorf("Reader error %v, want context.Canceled", err)
	}
	_ = inW.Close() // unblocks the read
	if err := <-runErr; !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
}

func TestCancelUnblocksForwarding(t *testing.T) {
	// Nobody reads Reader: the Guard blocks forwarding until ctx ends.
	g := New(strings.NewReader(`{"jsonrpc":"2.0","method":"m"}`+"\n"), io.Discard, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- g.Run(ctx) }()
	cancel()
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

func TestLockedWriterNeverInterleaves(t *testing.T) {
	const writers, lines = 8, 50
	var sw slowWriter
	lw := NewLockedWriter(&sw)
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
