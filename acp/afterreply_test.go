package acp

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAfterReply: what waits for a session is handed over once, in order,
// by the successful reply that opens it, and by no other line.
func TestAfterReply(t *testing.T) {
	a := newAfterReply(nil)
	var ran []string
	run := func(name string) func() { return func() { ran = append(ran, name) } }
	a.After("s-new", run("new1"))
	a.After("s-new", run("new2"))
	a.After("s-load", run("load"))
	a.After("s-failed", run("never"))
	a.Expect(json.RawMessage(`7`), "s-load")
	a.Expect(json.RawMessage(`"x"`), "s-failed")
	for _, tc := range []struct {
		line string
		want []string
	}{
		{`{"jsonrpc":"2.0","method":"session/request_permission","id":1,"params":{"sessionId":"s-new"}}`, nil},
		{`{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`, nil},
		{`{"jsonrpc":"2.0","id":"x","error":{"code":-32602,"message":"no"}}`, nil},
		{`not json`, nil},
		{`{"jsonrpc":"2.0","id":3,"result":{"sessionId":"s-new","modes":{}}}`, []string{"new1", "new2"}},
		{`{"jsonrpc":"2.0","id":7,"result":{}}`, []string{"load"}},
		{`{"jsonrpc":"2.0","id":4,"result":{"sessionId":"s-new"}}`, nil}, // once only
	} {
		ran = nil
		for _, fn := range a.replied([]byte(tc.line)) {
			fn()
		}
		if !slices.Equal(ran, tc.want) {
			t.Errorf("%s: ran %v, want %v", tc.line, ran, tc.want)
		}
	}
	if len(a.waiting) != 1 || len(a.requests) != 0 {
		t.Errorf("left %d waiting, %d requests", len(a.waiting), len(a.requests))
	}
	a.Drop("s-failed")
	if len(a.waiting) != 0 {
		t.Errorf("Drop left %v", a.waiting)
	}
}

// lockedBuilder is a strings.Builder safe for a writer and a reader.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestAfterReplyRunsAfterTheWrite: the functions run once the reply is
// out, never before.
func TestAfterReplyRunsAfterTheWrite(t *testing.T) {
	var out lockedBuilder
	a := newAfterReply(&out)
	seen := make(chan string, 1)
	a.After("s", func() { seen <- out.String() })
	reply := `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s"}}` + "\n"
	if _, err := a.Write([]byte(reply)); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-seen:
		if got != reply {
			t.Errorf("ran when the output was %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("never ran")
	}
}
