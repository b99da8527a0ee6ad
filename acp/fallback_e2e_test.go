package acp_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

// The fallback card, end to end: the real binary serving a client without
// Zed's terminal _meta (acptest.PlainCapabilities), as acpx, CodeCompanion
// or agent-shell are. These tests use acptest and llmtest directly.

// fallbackClient is a client of a real daemon with a scripted model.
type fallbackClient struct {
	t     *testing.T
	caps  map[string]any
	a     *acptest.Agent
	model *llmtest.Server
	state string
	sid   string
	asked atomic.Int32 // permission questions
}

// startFallback starts the daemon with args and env for a plain client
// whose permission questions are answered with answer.
func startFallback(t *testing.T, answer string, args []string, env ...string) *fallbackClient {
	t.Helper()
	return startClient(t, acptest.PlainCapabilities(), answer, args, env...)
}

// startClient is startFallback for a client with caps.
func startClient(t *testing.T, caps map[string]any, answer string, args []string, env ...string) *fallbackClient {
	t.Helper()
	model := llmtest.New(t)
	state := t.TempDir()
	env = append([]string{"DSH_STATE_DIR=" + state, "DSH_API_KEY=test-key", "DEEPSEEK_API_KEY=",
		"DSH_BASE_URL=" + model.URL(), "XDG_CONFIG_HOME=" + t.TempDir()}, env...)
	c := &fallbackClient{t: t, caps: caps, model: model, state: state}
	c.a = c.connect(args, env)
	respond := acptest.PermissionResponder(answer)
	c.a.SetResponder(func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		if method == "session/request_permission" {
			c.asked.Add(1)
		}
		return respond(ctx, method, params)
	})
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if err := c.a.Call(fbCtx(t), "session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{}}, &r); err != nil {
		t.Fatalf("session/new: %v", err)
	}
	c.sid = r.SessionID
	if _, err := c.a.WaitUpdate(fbCtx(t), c.sid, func(u json.RawMessage) bool {
		return acptest.UpdateKind(u) == "available_commands_update"
	}); err != nil {
		t.Fatalf("no available_commands_update: %v", err)
	}
	return c
}

// connect starts a daemon process and initializes it as the client.
func (c *fallbackClient) connect(args, env []string) *acptest.Agent {
	c.t.Helper()
	a := acptest.Start(c.t, acptest.BuildBinary(c.t), args, env)
	if err := a.Call(fbCtx(c.t), "initialize", acptest.InitializeParams(c.caps), new(map[string]any)); err != nil {
		c.t.Fatalf("initialize: %v", err)
	}
	return a
}

func fbCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// prompt sends text as a prompt and waits for its reply.
func (c *fallbackClient) prompt(text string) {
	c.t.Helper()
	if err := c.a.Call(fbCtx(c.t), "session/prompt", promptParams(c.sid, text), new(map[string]any)); err != nil {
		c.t.Fatalf("session/prompt %q: %v", text, err)
	}
}

// reload ends the daemon, starts another on the same state and loads the
// session into it; it returns the new daemon.
func (c *fallbackClient) reload() *acptest.Agent {
	c.t.Helper()
	if err := c.a.CloseStdin(); err != nil {
		c.t.Fatal(err)
	}
	if err := c.a.Wait(fbCtx(c.t)); err != nil {
		c.t.Fatalf("daemon end: %v", err)
	}
	d := c.connect(nil, []string{"DSH_STATE_DIR=" + c.state, "DSH_API_KEY=test-key", "DSH_BASE_URL=" + c.model.URL()})
	if err := d.Call(fbCtx(c.t), "session/load", map[string]any{"sessionId": c.sid, "cwd": c.t.TempDir(), "mcpServers": []any{}}, new(any)); err != nil {
		c.t.Fatalf("session/load: %v", err)
	}
	return d
}

// fbUpdate is a tool-call update as a plain client reads it.
type fbUpdate struct {
	Kind       string `json:"sessionUpdate"`
	ToolCallID string `json:"toolCallId"`
	Title      string `json:"title"`
	Status     string `json:"status"`
	Content    []struct {
		Type    string `json:"type"`
		Content struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"content"`
	Meta map[string]any `json:"_meta"`
}

func parseFB(t *testing.T, raw json.RawMessage) fbUpdate {
	t.Helper()
	var u fbUpdate
	if err := json.Unmarshal(raw, &u); err != nil {
		t.Fatalf("update %s: %v", raw, err)
	}
	return u
}

// console is the update's console block without its fences, "" when it
// has none.
func (u fbUpdate) console() string {
	for _, c := range u.Content {
		if text := c.Content.Text; strings.HasPrefix(text, "```") && strings.Contains(text, "console\n") {
			text = text[strings.Index(text, "console\n")+len("console\n"):]
			return text[:strings.LastIndex(text, "\n")]
		}
	}
	return ""
}

func (u fbUpdate) texts() string {
	var out []string
	for _, c := range u.Content {
		out = append(out, c.Content.Text)
	}
	return strings.Join(out, "\n")
}

// finalOf is the last update of the card titled title (the card's final
// one), from updates; it fails unless the card ended.
func finalOf(t *testing.T, updates []json.RawMessage, title string) fbUpdate {
	t.Helper()
	id := ""
	var final *fbUpdate
	for _, raw := range updates {
		if k := acptest.UpdateKind(raw); k != "tool_call" && k != "tool_call_update" {
			continue
		}
		u := parseFB(t, raw)
		if len(u.Meta) > 0 && (u.Kind == "tool_call" || u.Kind == "tool_call_update") {
			t.Errorf("a plain client got _meta: %s", raw)
		}
		switch {
		case u.Kind == "tool_call" && u.Title == title:
			id = u.ToolCallID
		case u.Kind == "tool_call_update" && id != "" && u.ToolCallID == id && (u.Status == "completed" || u.Status == "failed"):
			uu := u
			final = &uu
		}
	}
	if final == nil {
		t.Fatalf("no finished card titled %q among %d updates", title, len(updates))
	}
	return *final
}

// Output arrives while the command runs: the first line is on the card
// before the command ends (and before the second line exists).
func TestFallbackOutputArrivesWhileRunning(t *testing.T) {
	c := startFallback(t, "allow_once", nil)
	const cmd = "echo before; sleep 3; echo after"
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		done <- c.a.Call(fbCtx(t), "session/prompt", promptParams(c.sid, "!"+cmd), new(map[string]any))
	}()
	raw, err := c.a.WaitUpdate(fbCtx(t), c.sid, func(raw json.RawMessage) bool {
		var u fbUpdate
		return json.Unmarshal(raw, &u) == nil && u.Kind == "tool_call_update" && strings.Contains(u.console(), "before")
	})
	if err != nil {
		t.Fatalf("no live update with the first line: %v", err)
	}
	t.Logf("first output on the card after %v", time.Since(start))
	select {
	case err := <-done:
		t.Fatalf("the command ended (%v) before its first output reached the card", err)
	default:
	}
	if live := parseFB(t, raw); live.Status != "" || strings.Contains(live.console(), "after") || live.console() != "before" {
		t.Errorf("live update: status %q, console %q", live.Status, live.console())
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := finalOf(t, c.a.Updates(c.sid), cmd).console(); got != "before\nafter\ndsh-acp: exit 0" {
		t.Errorf("final console %q", got)
	}
}

// The final text ends with one line saying how the command ended, live and
// on session/load alike.
func TestFallbackEndLines(t *testing.T) {
	c := startFallback(t, "allow_once", []string{"--timeout", "1s"})
	tests := []struct{ cmd, want string }{
		{"echo ok", "ok\ndsh-acp: exit 0"},
		{`sh -c "echo failing; exit 3"`, "failing\ndsh-acp: exit 3"},
		{"echo doomed; kill -9 $$", "doomed\ndsh-acp: killed by SIGKILL"},
		{"echo slow; sleep 30", "slow\ndsh-acp: timed out after 1s"},
	}
	for _, tt := range tests {
		c.prompt("!" + tt.cmd)
		if got := finalOf(t, c.a.Updates(c.sid), tt.cmd).console(); got != tt.want {
			t.Errorf("%s: final console %q, want %q", tt.cmd, got, tt.want)
		}
	}
	// A reload, by another daemon once this one ended, draws the same endings.
	d := c.reload()
	for _, tt := range tests {
		if got := finalOf(t, d.Updates(c.sid), tt.cmd).console(); got != tt.want {
			t.Errorf("%s replayed: final console %q, want %q", tt.cmd, got, tt.want)
		}
	}
}

// A call that did not run shows the user-facing reason the terminal card
// shows, not the model's instructions.
func TestFallbackDeclinedAndDenied(t *testing.T) {
	for _, tt := range []struct {
		name, answer, want string
		env                []string
	}{
		{"declined", "reject_once", "dsh-acp: declined by the user", nil},
		{"denied", "allow_once", "dsh-acp: denied in read-only mode", []string{"DSH_MODE=read-only"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := startFallback(t, tt.answer, nil, tt.env...)
			c.model.Push(
				llmtest.Calls(llmtest.Call{ID: "call_1", Name: "bash", Args: `{"command":"touch nope","description":"Create a file"}`}),
				llmtest.Reply("done"),
			)
			c.prompt("please run it")
			final := finalOf(t, c.a.Updates(c.sid), "touch nope")
			if final.Status != "failed" || !strings.HasPrefix(final.console(), tt.want) || strings.Contains(final.console(), "\n") {
				t.Errorf("final: status %q, console %q; want failed, one line starting %q", final.Status, final.console(), tt.want)
			}
			if strings.Contains(final.texts(), "Do not retry") {
				t.Errorf("the card shows the model's instructions: %q", final.texts())
			}
			if got := toolResultOf(t, c.model, "call_1"); !strings.Contains(got, "Do not retry") {
				t.Errorf("the model read %q", got)
			}
		})
	}
}

// A 400 000-line output ends with its tail — what the model sees — in a
// bounded card, after a note of what was cut.
func TestFallbackKeepsTheTail(t *testing.T) {
	c := startFallback(t, "allow_once", nil)
	const cmd = "seq 1 400000"
	c.prompt("!" + cmd)
	updates := c.a.Updates(c.sid)
	final := finalOf(t, updates, cmd)
	got := final.console()
	if !strings.HasSuffix(got, "\n399999\n400000\ndsh-acp: exit 0") || len(final.texts()) > 33<<10 {
		t.Fatalf("final card of %d bytes ends %q", len(final.texts()), got[max(0, len(got)-60):])
	}
	if !strings.HasPrefix(got, "[… ") || !strings.Contains(got, " bytes above not shown]\n") {
		t.Errorf("final card starts %q", got[:min(len(got), 60)])
	}
	biggest := 0
	for _, raw := range updates {
		biggest = max(biggest, len(raw))
	}
	t.Logf("%d updates, the largest %d bytes", len(updates), biggest)
	if biggest > 40<<10 {
		t.Errorf("an update of %d bytes", biggest)
	}
	if strings.Contains(got, "\n1\n2\n3\n") || strings.Contains(got, "\n100000\n") {
		t.Error("the head of the output reached the final card")
	}
}
