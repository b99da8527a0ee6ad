package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestPendingCallsMatchIDsAsJSONValues(t *testing.T) {
	c := newPendingCalls()
	var got []string
	note := func(s string) func(json.RawMessage) { return func(json.RawMessage) { got = append(got, s) } }
	c.add(json.RawMessage(`"a<b"`), note("string"))
	c.add(json.RawMessage(`7`), note("first 7"))
	c.add(json.RawMessage(`7`), note("second 7"))
	c.add(json.RawMessage(`"7"`), nil)
	c.replied(json.RawMessage(`"a\u003cb"`), nil) // the same string, escaped as the SDK's encoder does
	c.replied(json.RawMessage(`7`), nil)
	c.replied(json.RawMessage(`8`), nil) // nothing pending: ignored
	if want := "string|first 7"; strings.Join(got, "|") != want {
		t.Fatalf("callbacks %q, want %q", got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if n := c.wait(ctx); n != 2 {
		t.Fatalf("wait = %d pending, want 2", n)
	}
	c.replied(json.RawMessage(`"7"`), nil)
	c.replied(json.RawMessage(`7`), nil)
	if n := c.wait(context.Background()); n != 0 {
		t.Fatalf("wait = %d pending, want 0", n)
	}
}

func TestPendingCallsAbandon(t *testing.T) {
	c := newPendingCalls()
	ran := 0
	c.add(json.RawMessage(`1`), func(json.RawMessage) { ran++ })
	c.add(json.RawMessage(`2`), nil)
	c.abandon()
	c.abandon() // once
	if ran != 1 {
		t.Fatalf("abandon ran %d callbacks, want 1", ran)
	}
	c.wait(context.Background()) // returns: nothing is waited for any more
	c.add(json.RawMessage(`3`), func(json.RawMessage) { ran++ })
	if ran != 2 {
		t.Fatal("a request added after abandon is tracked")
	}
}

func TestReplyID(t *testing.T) {
	tests := []struct {
		line, id string // id "" means not a reply
	}{
		{`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`, "3"},
		{`{"id":"x","jsonrpc":"2.0","error":{"code":-32603,"message":"m"}}`, `"x"`},
		{`{"jsonrpc":"2.0","id":4,"method":"session/request_permission","params":{}}`, ""},
		{`{"jsonrpc":"2.0","method":"session/update","params":{}}`, ""},
		{`{"method":"x","jsonrpc":"2.0","id":5}`, ""},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, ""},
		{"not json", ""},
	}
	for _, tt := range tests {
		id, _, ok := replyID([]byte(tt.line + "\n"))
		if ok != (tt.id != "") || string(id) != tt.id {
			t.Errorf("replyID(%s) = %s, %v; want %q", tt.line, id, ok, tt.id)
		}
	}
}

// The reply tracker reads what the real SDK writes: a request's reply marks
// it answered, after the reply was written.
func TestReplyWatcherSeesTheSDKsReplies(t *testing.T) {
	inR, inW := io.Pipe()
	var out bytes.Buffer
	calls := newPendingCalls()
	w := &replyWatcher{w: &out, calls: calls}
	handler := func(context.Context, string, json.RawMessage) (any, *sdk.RequestError) {
		return map[string]any{"ok": true}, nil
	}
	conn := sdk.NewConnection(handler, w, inR)
	answered := make(chan string, 2)
	for _, id := range []string{`"a<&>b"`, `1.50`} {
		calls.add(json.RawMessage(id), func(json.RawMessage) {
			answered <- out.String() // written before the callback runs
		})
		fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%s,"method":"m","params":{}}`+"\n", id)
		if got := <-answered; !strings.Contains(got, `"result"`) {
			t.Fatalf("callback for %s ran before the reply was written: %q", id, got)
		}
	}
	inW.Close()
	<-conn.Done()
}

func TestNotificationGate(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	g := newNotificationGate(zap.New(core))
	if !g.admitCancel("s") || g.admitCancel("s") {
		t.Fatal("a second cancel for a session with one queued was admitted")
	}
	g.cancelHandled("s")
	if !g.admitCancel("s") {
		t.Fatal("a cancel after the queued one was handled was refused")
	}
	for i := 1; i < maxQueuedNotifications; i++ {
		if !g.admitCancel(fmt.Sprint("s", i)) {
			t.Fatalf("cancel %d refused under the bound", i)
		}
	}
	if g.admitCancel("one too many") {
		t.Fatal("a cancel over the bound was admitted")
	}
	for range 9 {
		g.drop("no handler", "_x/y")
	}
	// 1 over the bound, then 9 without a handler: logged at 1, 2, 4, 8.
	if n := logs.FilterField(zap.String("reason", "no handler")).Len(); n != 4 {
		t.Errorf("%d warnings for 9 drops, want 4 (counts 1, 2, 4, 8)", n)
	}
	if n := logs.FilterField(zap.Uint64("count", 8)).Len(); n != 1 {
		t.Errorf("no warning carries the count 8: %v", logs.All())
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("EPIPE") }

func TestOutputKeepsLinesJSONText(t *testing.T) {
	var buf bytes.Buffer
	o := newOutput(&buf, zap.NewNop())
	defer o.close()
	valid := `{"jsonrpc":"2.0","id":"é","result":{}}` + "\n"
	invalid := "{\"jsonrpc\":\"2.0\",\"id\":\"a\xffb\xc3\",\"result\":{\"t\":\"\xed\xa0\x80\"}}\n"
	for _, l := range []string{valid, invalid} {
		if n, err := o.Write([]byte(l)); n != len(l) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	lines := strings.SplitAfter(buf.String(), "\n")
	if lines[0] != valid {
		t.Errorf("a valid line changed: %q", lines[0])
	}
	if !utf8.ValidString(lines[1]) || !json.Valid([]byte(lines[1])) || !strings.Contains(lines[1], "a\uFFFDb\uFFFD") {
		t.Errorf("invalid line written as %q", lines[1])
	}
	select {
	case <-o.Broken():
		t.Fatal("broken without a failed write")
	default:
	}
	bad := newOutput(failingWriter{}, zap.NewNop())
	_, _ = bad.Write([]byte("{}\n"))
	<-bad.Broken()
}

// A pipe whose reader closes is reported without any write, once watched.
func TestOutputNoticesAHangUp(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	o := newOutput(w, zap.NewNop())
	defer o.close()
	o.watch()
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

// pipeClient talks to an in-process serve over pipes.
type pipeClient struct {
	t     *testing.T
	in    *io.PipeWriter
	lines chan []byte
	seen  [][]byte
}

func (c *pipeClient) send(format string, args ...any) {
	c.t.Helper()
	if _, err := fmt.Fprintf(c.in, format+"\n", args...); err != nil {
		c.t.Fatal(err)
	}
}

// reply returns the reply to id (a JSON literal), keeping every line read.
func (c *pipeClient) reply(id string) map[string]json.RawMessage {
	c.t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("output ended before the reply to %s", id)
			}
			c.seen = append(c.seen, l)
			var m map[string]json.RawMessage
			if json.Unmarshal(l, &m) == nil && string(m["id"]) == id && m["method"] == nil {
				return m
			}
		case <-timeout:
			c.t.Fatalf("no reply to %s", id)
		}
	}
}

// A panic while session/load draws the replay becomes -32603 for that
// request alone: the daemon keeps serving, and the same session loads on
// the next try.
func TestReplayPanicAnswersInternalError(t *testing.T) {
	cfg := localConfig(t)
	var armed, fired atomic.Bool
	h := hooks{beforeDraw: func() {
		if armed.Load() && fired.CompareAndSwap(false, true) {
			panic("injected drawing panic")
		}
	}}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- serve(context.Background(), inR, outW, cfg, h)
		outW.Close()
	}()
	c := &pipeClient{t: t, in: inW, lines: make(chan []byte, 1024)}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			c.lines <- bytes.Clone(sc.Bytes())
		}
	}()
	cwd := t.TempDir()
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	c.reply("1")
	c.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, cwd)
	var created struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(c.reply("2")["result"], &created)
	c.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"!echo hi"}]}}`, created.SessionID)
	c.reply("3")
	c.send(`{"jsonrpc":"2.0","id":4,"method":"session/close","params":{"sessionId":%q}}`, created.SessionID)
	c.reply("4")

	armed.Store(true)
	load := `{"jsonrpc":"2.0","id":%d,"method":"session/load","params":{"sessionId":%q,"cwd":%q,"mcpServers":[]}}`
	c.send(load, 5, created.SessionID, cwd)
	var rpcErr struct {
		Code int `json:"code"`
	}
	if err := json.Unmarshal(c.reply("5")["error"], &rpcErr); err != nil || rpcErr.Code != -32603 {
		t.Fatalf("load with a drawing panic: error %+v (%v), want -32603", rpcErr, err)
	}
	if !fired.Load() {
		t.Fatal("the hook never ran: the test proves nothing")
	}
	c.send(load, 6, created.SessionID, cwd)
	if r := c.reply("6"); r["error"] != nil {
		t.Fatalf("second load: %s", r["error"])
	}
	c.send(`{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"!echo again"}]}}`, created.SessionID)
	if r := c.reply("7"); !bytes.Contains(r["result"], []byte("end_turn")) {
		t.Fatalf("prompt after the panic: %s %s", r["result"], r["error"])
	}
	inW.Close()
	for range c.lines {
	}
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
}

// failingReader passes its first read through, then fails. (The first
// read returns only once the guard runs, after the connection is wired.)
type failingReader struct {
	r    io.Reader
	read bool
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.read {
		return 0, errors.New("injected read error")
	}
	f.read = true
	return f.r.Read(p)
}

// When the SDK's side of the connection ends while stdin stays open, serve
// shuts down as on EOF instead of serving nobody (and the guard, left
// forwarding to a reader nobody drains, does not hold it up).
func TestServeEndsWhenTheSDKConnectionEnds(t *testing.T) {
	// Lines the SDK took but never dispatched are never answered: shutdown
	// waits for them ShutdownGrace at most.
	cfg := localConfig(t)
	cfg.ShutdownGrace = time.Second
	h := hooks{sdkInput: func(r io.Reader) io.Reader { return &failingReader{r: r} }}
	inR, inW := io.Pipe()
	defer inW.Close()
	served := make(chan error, 1)
	go func() { served <- serve(context.Background(), inR, io.Discard, cfg, h) }()
	// The SDK's second read fails; these lines keep the guard forwarding.
	go func() {
		for i := 0; ; i++ {
			if _, err := fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"session/list","params":{}}`+"\n", i); err != nil {
				return
			}
		}
	}()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve still running 20s after the SDK's connection ended")
	}
}
