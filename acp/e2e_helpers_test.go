package acp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/eventually"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	acptest.RemoveBuilds()
	os.Exit(code)
}

// daemon is the real binary over stdio with a private state directory.
type daemon struct {
	*acptest.Agent
	t        *testing.T
	stateDir string
}

// startDaemon runs dsh-acp with no model configured unless env sets one.
func startDaemon(t *testing.T, caps map[string]any, args []string, env ...string) *daemon {
	t.Helper()
	state := t.TempDir()
	return startDaemonIn(t, state, caps, args, env...)
}

func startDaemonIn(t *testing.T, state string, caps map[string]any, args []string, env ...string) *daemon {
	t.Helper()
	bin := acptest.BuildBinary(t)
	base := []string{"DSH_STATE_DIR=" + state, "DSH_API_KEY=", "DEEPSEEK_API_KEY=", "DSH_LOG_LEVEL=debug"}
	a := acptest.Start(t, bin, args, append(base, env...))
	d := &daemon{Agent: a, t: t, stateDir: state}
	var init map[string]any
	if err := a.Call(ctxT(t), "initialize", acptest.InitializeParams(caps), &init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return d
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (d *daemon) newSession(cwd string) string {
	d.t.Helper()
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if err := d.Call(ctxT(d.t), "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}, &r); err != nil {
		d.t.Fatalf("session/new: %v", err)
	}
	// The slash commands follow the reply: wait for them, so they never
	// count among the first turn's updates.
	if _, err := d.WaitUpdate(ctxT(d.t), r.SessionID, func(u json.RawMessage) bool {
		return acptest.UpdateKind(u) == "available_commands_update"
	}); err != nil {
		d.t.Fatalf("no available_commands_update after session/new: %v", err)
	}
	return r.SessionID
}

func promptParams(sid, text string) map[string]any {
	return map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": text}}}
}

// prompt sends a prompt and returns its stop reason.
func (d *daemon) prompt(sid, text string) string {
	d.t.Helper()
	var r struct {
		StopReason string `json:"stopReason"`
	}
	if err := d.Call(ctxT(d.t), "session/prompt", promptParams(sid, text), &r); err != nil {
		d.t.Fatalf("session/prompt %q: %v", text, err)
	}
	return r.StopReason
}

// update is a decoded session/update payload, enough for assertions.
type update struct {
	Kind       string          `json:"sessionUpdate"`
	ToolCallID string          `json:"toolCallId"`
	Title      string          `json:"title"`
	ToolKind   string          `json:"kind"`
	Status     string          `json:"status"`
	Content    json.RawMessage `json:"content"`
	RawInput   json.RawMessage `json:"rawInput"`
	Meta       struct {
		Info *struct {
			TerminalID string `json:"terminal_id"`
			Cwd        string `json:"cwd"`
		} `json:"terminal_info"`
		Output *struct {
			TerminalID string `json:"terminal_id"`
			Data       string `json:"data"`
		} `json:"terminal_output"`
		Exit *struct {
			TerminalID string  `json:"terminal_id"`
			ExitCode   *int    `json:"exit_code"`
			Signal     *string `json:"signal"`
		} `json:"terminal_exit"`
	} `json:"_meta"`
	ChunkText string
}

func decodeUpdates(t *testing.T, raw []json.RawMessage) []update {
	t.Helper()
	out := make([]update, 0, len(raw))
	for _, r := range raw {
		var u update
		if err := json.Unmarshal(r, &u); err != nil {
			t.Fatalf("bad update %s: %v", r, err)
		}
		var chunk struct {
			Content struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if strings.HasSuffix(u.Kind, "_chunk") && json.Unmarshal(r, &chunk) == nil {
			u.ChunkText = chunk.Content.Text
		}
		out = append(out, u)
	}
	return out
}

// card gathers one tool call's updates.
type card struct {
	open    update
	outputs []string
	final   *update
	updates []update
}

func cards(us []update) map[string]*card {
	m := map[string]*card{}
	for _, u := range us {
		switch u.Kind {
		case "tool_call":
			m[u.ToolCallID] = &card{open: u}
		case "tool_call_update":
			c := m[u.ToolCallID]
			if c == nil {
				continue
			}
			c.updates = append(c.updates, u)
			if u.Meta.Output != nil {
				c.outputs = append(c.outputs, u.Meta.Output.Data)
			}
			if u.Status == "completed" || u.Status == "failed" {
				uu := u
				c.final = &uu
			}
		}
	}
	return m
}

// isChangeCard reports whether a tool call id is a change card's (the
// files a command changed, drawn after its own card: internal/changes).
func isChangeCard(id string) bool { return strings.HasPrefix(id, "changes-") }

// onlyCard is the one command card of us; a change card that follows it is
// not counted.
func onlyCard(t *testing.T, us []update) *card {
	t.Helper()
	cs := cards(us)
	for id := range cs {
		if isChangeCard(id) {
			delete(cs, id)
		}
	}
	if len(cs) != 1 {
		t.Fatalf("want one card, got %d: %+v", len(cs), us)
	}
	for _, c := range cs {
		return c
	}
	return nil
}

func (c *card) contentTexts() []string {
	var items []struct {
		Type    string `json:"type"`
		Content struct {
			Text string `json:"text"`
		} `json:"content"`
		TerminalID string `json:"terminalId"`
	}
	src := c.open.Content
	if c.final != nil && len(c.final.Content) > 0 {
		src = c.final.Content
	}
	_ = json.Unmarshal(src, &items)
	var out []string
	for _, it := range items {
		if it.Type == "content" {
			out = append(out, it.Content.Text)
		}
	}
	return out
}

// rpcCode extracts a JSON-RPC error code from a Call error.
func rpcCode(err error) int64 {
	var e *jsonrpc2.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// count is how many updates of kind for sid contain substr.
func (d *daemon) count(sid, kind, substr string) int {
	n := 0
	for _, u := range d.Updates(sid) {
		if acptest.UpdateKind(u) == kind && bytes.Contains(u, []byte(substr)) {
			n++
		}
	}
	return n
}

// waitFor polls cond (which may call the daemon) until it holds.
func (d *daemon) waitFor(cond func() bool) {
	d.t.Helper()
	eventually.True(d.t, 20*time.Second, cond, "condition not met within 20s")
}

// toolResultOf is the text the model received for callID.
func toolResultOf(t *testing.T, model *llmtest.Server, callID string) string {
	t.Helper()
	for _, r := range model.Requests() {
		for _, m := range r.Messages {
			if m.Role == "tool" && m.ToolCallID == callID {
				return m.Content
			}
		}
	}
	t.Fatalf("the model never received a result for %s", callID)
	return ""
}
