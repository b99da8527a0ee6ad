package acp

import (
	"encoding/json"
	"io"
	"slices"
	"testing"
	"time"
)

// TestAfterReply: what waits for a session runs once, in order, after
// its opening reply is written, and for no other line.
func TestAfterReply(t *testing.T) {
	a := newAfterReply(io.Discard)
	ran := make(chan string, 8)
	run := func(name string) func() { return func() { ran <- name } }
	a.After("s-new", run("new1"))
	a.After("s-new", run("new2"))
	a.After("s-load", run("load"))
	a.After("s-failed", run("never"))
	a.Expect(json.RawMessage(`7`), "s-load")
	a.Expect(json.RawMessage(`"x"`), "s-failed")
	write := func(line string) {
		t.Helper()
		if _, err := a.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(want ...string) {
		t.Helper()
		var got []string
		for range want {
			select {
			case name := <-ran:
				got = append(got, name)
			case <-time.After(5 * time.Second):
				t.Fatalf("ran %v, want %v", got, want)
			}
		}
		select {
		case name := <-ran:
			got = append(got, name)
		case <-time.After(20 * time.Millisecond):
		}
		if !slices.Equal(got, want) {
			t.Fatalf("ran %v, want %v", got, want)
		}
	}
	for _, line := range []string{
		`{"jsonrpc":"2.0","method":"session/request_permission","id":1,"params":{"sessionId":"s-new"}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`,
		`{"jsonrpc":"2.0","id":"x","error":{"code":-32602,"message":"no"}}`,
		`not json`,
	} {
		write(line)
	}
	expect()
	write(`{"jsonrpc":"2.0","id":3,"result":{"sessionId":"s-new","modes":{}}}`)
	expect("new1", "new2")
	write(`{"jsonrpc":"2.0","id":7,"result":{}}`)
	expect("load")
	write(`{"jsonrpc":"2.0","id":4,"result":{"sessionId":"s-new"}}`)
	expect()
	a.mu.Lock()
	waiting, requests := len(a.waiting), len(a.requests)
	a.mu.Unlock()
	if waiting != 1 || requests != 0 {
		t.Errorf("left %d waiting, %d requests", waiting, requests)
	}
	a.Drop("s-failed")
	if len(a.waiting) != 0 {
		t.Errorf("Drop left %v", a.waiting)
	}
}
