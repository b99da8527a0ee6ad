package acp

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"sync/atomic"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/llm"
)

// listingModel is a model client that counts the model lists asked of it.
type listingModel struct{ lists atomic.Int32 }

func (m *listingModel) Stream(context.Context, llm.Request, func(llm.Delta)) (llm.Response, error) {
	return llm.Response{}, nil
}

func (m *listingModel) ListModels(context.Context) ([]llm.Model, error) {
	m.lists.Add(1)
	return []llm.Model{{ID: "m"}, {ID: "other"}}, nil
}

// What the initialize reply need not wait for — Config.Started (the
// daemon's signal handlers), the model list's fetch, the hang-up watcher —
// starts when the client's first message other than initialize arrives,
// once, before that message is handled.
func TestStartedWaitsForTheFirstRequest(t *testing.T) {
	model := &listingModel{}
	var started atomic.Int32
	cfg := localConfig(t)
	cfg.Model, cfg.Agent, cfg.Started = model, agent.Config{Model: "m"}, func() { started.Add(1) }
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- serve(context.Background(), inR, outW, cfg, hooks{})
		outW.Close()
	}()
	c := &pipeClient{t: t, in: inW, lines: make(chan []byte, 1024)}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			c.lines <- bytes.Clone(sc.Bytes())
		}
	}()
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	c.reply("1")
	if n, l := started.Load(), model.lists.Load(); n != 0 || l != 0 {
		t.Errorf("after initialize: Started ran %d times, the model list was asked %d times; want neither", n, l)
	}
	c.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, t.TempDir())
	c.reply("2")
	c.send(`{"jsonrpc":"2.0","id":3,"method":"session/list","params":{}}`)
	c.reply("3")
	if n, l := started.Load(), model.lists.Load(); n != 1 || l != 1 {
		t.Errorf("after session/new: Started ran %d times, the model list was asked %d times; want once each", n, l)
	}
	inW.Close()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}
