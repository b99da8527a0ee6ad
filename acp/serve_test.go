package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"
)

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

// failingReader passes its first read through, then fails.
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

// When reading the input fails while the client keeps writing, serve shuts
// down as on EOF, answering what it read.
func TestServeEndsWhenTheInputFails(t *testing.T) {
	cfg := localConfig(t)
	cfg.ShutdownGrace = time.Second
	h := hooks{input: func(r io.Reader) io.Reader { return &failingReader{r: r} }}
	inR, inW := io.Pipe()
	defer inW.Close()
	served := make(chan error, 1)
	go func() { served <- serve(context.Background(), inR, io.Discard, cfg, h) }()
	// The second read fails; the client goes on writing.
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
		t.Fatal("serve still running 20s after its input failed")
	}
}
