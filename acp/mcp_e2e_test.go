package acp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/eventually"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
	"github.com/dsh-acp/dsh-acp/internal/mcp/mcptest"
)

// These tests drive the real binary with the test MCP server
// (internal/mcp/mcptest, built from internal/mcp/testdata/mcpserver) and a
// scripted model: what the model is offered and told, what the editor is
// asked and shown, and what the server itself saw (its record file).

// mcpServerPackage is the test MCP server's main package.
const mcpServerPackage = "./internal/mcp/testdata/mcpserver"

// mcpFixture is a daemon with a scripted model, a recording permission
// responder and one session whose MCP servers the test chose.
type mcpFixture struct {
	*llmFixture
	model  *llmtest.Server
	record string // the stdio server's record file
	marker string // in the stdio server's environment
	dir    string // where write_note writes
	config string // the daemon's XDG_CONFIG_HOME

	mu     sync.Mutex
	answer string            // the option kind the responder picks
	asked  []json.RawMessage // session/request_permission params
}

// newMCPFixture starts the daemon and opens a session with servers; nil
// servers means the test server over stdio, as "test".
func newMCPFixture(t *testing.T, servers func(f *mcpFixture) []any, env ...string) *mcpFixture {
	t.Helper()
	model := llmtest.New(t)
	f := &mcpFixture{model: model, answer: "allow_once", marker: acptest.NewMarker(), dir: t.TempDir(), config: t.TempDir()}
	f.record = filepath.Join(t.TempDir(), "record")
	f.llmFixture = newLLMFixture(t, model, llmOptions{env: append([]string{"XDG_CONFIG_HOME=" + f.config}, env...)})
	f.SetResponder(f.respond)
	if servers == nil {
		servers = func(f *mcpFixture) []any { return []any{f.stdioServer("test")} }
	}
	f.sid = f.openSession(servers(f))
	return f
}

// stdioServer is the mcpServers entry of the test server over stdio.
func (f *mcpFixture) stdioServer(name string) map[string]any {
	return map[string]any{
		"name": name, "command": acptest.BuildPackage(f.t, mcpServerPackage), "args": []string{},
		"env": []map[string]string{
			{"name": "MCPTEST_RECORD", "value": f.record},
			{"name": "MCPTEST_DIR", "value": f.dir},
			{"name": "MCPTEST_MARKER", "value": f.marker},
		},
	}
}

// openSession sends session/new with servers and returns the session id.
func (f *mcpFixture) openSession(servers []any) string {
	f.t.Helper()
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if err := f.Call(ctxT(f.t), "session/new", map[string]any{"cwd": f.cwd, "mcpServers": servers}, &r); err != nil {
		f.t.Fatalf("session/new: %v", err)
	}
	return r.SessionID
}

func (f *mcpFixture) respond(ctx context.Context, method string, params json.RawMessage) (any, error) {
	f.mu.Lock()
	answer := f.answer
	if method == "session/request_permission" {
		f.asked = append(f.asked, params)
	}
	f.mu.Unlock()
	return acptest.PermissionResponder(answer)(ctx, method, params)
}

func (f *mcpFixture) setAnswer(kind string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answer = kind
}

// questions returns the permission questions asked so far.
func (f *mcpFixture) questions() []json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.asked)
}

// call scripts one model turn calling tool with args, then answering, and
// runs it; it returns the turn's updates.
func (f *mcpFixture) call(id, tool, args, want string) []update {
	f.t.Helper()
	f.model.Push(llmtest.Calls(llmtest.Call{ID: id, Name: tool, Args: args}), llmtest.Reply("done"))
	return f.mustTurn("use the tool", want)
}

// resultFor is the text the model received for call id.
func (f *mcpFixture) resultFor(id string) string {
	f.t.Helper()
	return llmToolResult(f.t, f.model.Last(), id)
}

// recorded is what the stdio server recorded.
func (f *mcpFixture) recorded() string {
	b, _ := os.ReadFile(f.record)
	return string(b)
}

// waitRecorded waits until the server recorded line.
func waitRecorded(t *testing.T, path, line string) {
	t.Helper()
	eventually.True(t, 20*time.Second, func() bool {
		b, _ := os.ReadFile(path)
		return slices.Contains(strings.Split(string(b), "\n"), line)
	}, "the MCP server never recorded %q", line)
}

// cardView is what a client keeps of a card: its final title, kind,
// status, input and content.
type cardView struct {
	Title, Kind, Status, RawInput string
	Content                       []string
}

func viewOf(c *card) cardView {
	v := cardView{Title: c.open.Title, Kind: c.open.ToolKind, RawInput: compactJSON(c.open.RawInput), Content: c.contentTexts()}
	if c.final != nil {
		v.Status = c.final.Status
		if c.final.Title != "" {
			v.Title = c.final.Title
		}
	}
	return v
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// TestMCPStdioServerE2E is the whole life of a stdio MCP server in a
// session: its tools offered with their schemas, a writing call asked
// about and carded, a rejected call, a read-only tool allowed for the
// session, a cancelled slow call the server hears about, a broken server
// reported once, session/close leaving no process, and a reload drawing
// the same cards.
func TestMCPStdioServerE2E(t *testing.T) {
	f := newMCPFixture(t, func(f *mcpFixture) []any {
		return []any{f.stdioServer("test"), map[string]any{"name": "broken", "command": "/nonexistent/dsh-mcp-server", "args": []string{}, "env": []any{}}}
	})

	// The broken server is reported once, after the session/new reply.
	f.waitFor(func() bool { return f.count(f.sid, "agent_message_chunk", `MCP server \"broken\"`) > 0 })
	mcpCheckNoticeAfterReply(t, f.Inbound(), f.sid, `MCP server \"broken\" is not available`)

	// A writing tool: asked about, then run; the card shows its text.
	us := f.call("call_w", "mcp__test__write_note", `{"name":"n.txt","text":"abc"}`, "end_turn")
	first := f.model.Requests()[0]
	mcpCheckOffered(t, first)
	if got := f.resultFor("call_w"); got != "wrote 3 bytes to n.txt" {
		t.Errorf("the model read %q", got)
	}
	if b, err := os.ReadFile(filepath.Join(f.dir, "n.txt")); err != nil || string(b) != "abc" {
		t.Errorf("the note: %q %v", b, err)
	}
	c := cards(us)["call_w"]
	if c == nil || c.final == nil {
		t.Fatalf("no finished card for call_w: %+v", us)
	}
	if v := viewOf(c); v.Title != "test: write_note" || v.Kind != "other" || v.Status != "completed" ||
		v.RawInput != `{"name":"n.txt","text":"abc"}` || !slices.Equal(v.Content, []string{"wrote 3 bytes to n.txt"}) {
		t.Errorf("card %+v", v)
	}
	qs := f.questions()
	if len(qs) != 1 || !strings.Contains(string(qs[0]), `"title":"test: write_note"`) ||
		!strings.Contains(string(qs[0]), "Always allow `test: write_note` in this session") {
		t.Fatalf("questions %s", qs)
	}

	// Rejected: not run, and the model is told.
	f.setAnswer("reject_once")
	us = f.call("call_r", "mcp__test__write_note", `{"name":"r.txt","text":"no"}`, "end_turn")
	if got := f.resultFor("call_r"); !strings.Contains(got, "The user declined this tool call") {
		t.Errorf("the model read %q after a reject", got)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "r.txt")); err == nil {
		t.Error("a rejected call ran")
	}
	if v := viewOf(cards(us)["call_r"]); v.Status != "failed" {
		t.Errorf("rejected card %+v", v)
	}

	// A read-only tool is asked about until its server's read-only tools
	// are allowed for the session; then it runs unasked.
	f.setAnswer("allow_always")
	f.call("call_e1", "mcp__test__echo", `{"text":"one"}`, "end_turn")
	qs = f.questions()
	if len(qs) != 3 || !strings.Contains(string(qs[2]), "Always allow the read-only tools of `test` in this session") {
		t.Fatalf("read-only tool question: %s", qs[len(qs)-1])
	}
	us = f.call("call_e2", "mcp__test__echo", `{"text":"two"}`, "end_turn")
	if len(f.questions()) != 3 || f.resultFor("call_e2") != "echo: two" {
		t.Errorf("an allowed read-only tool was asked about again, or read %q", f.resultFor("call_e2"))
	}
	if v := viewOf(cards(us)["call_e2"]); v.Kind != "read" || v.Title != "test: echo" || v.Status != "completed" {
		t.Errorf("read-only card %+v", v)
	}

	// Cancelled during the slow tool: the server hears of it, the turn
	// ends cancelled, the card fails, and the next turn works.
	f.setAnswer("allow_once")
	f.model.Push(llmtest.Calls(llmtest.Call{ID: "call_s", Name: "mcp__test__slow", Args: `{"ms":60000}`}))
	before := len(f.Updates(f.sid))
	reply := f.startTurn("take your time")
	waitRecorded(t, f.record, "call slow")
	if got := f.cancelAndWait(reply); got != "cancelled" {
		t.Fatalf("stopReason %q after the cancel", got)
	}
	waitRecorded(t, f.record, "cancelled slow")
	if c := cards(decodeUpdates(t, f.Updates(f.sid)[before:]))["call_s"]; c == nil || c.final == nil || c.final.Status != "failed" {
		t.Errorf("the cancelled call's card: %+v", c)
	}
	f.call("call_e3", "mcp__test__echo", `{"text":"after"}`, "end_turn")
	if got := f.resultFor("call_e3"); got != "echo: after" {
		t.Errorf("after the cancel the model read %q", got)
	}
	if n := f.count(f.sid, "agent_message_chunk", `MCP server \"broken\"`); n != 1 {
		t.Errorf("the broken server was reported %d times", n)
	}
	live := map[string]cardView{}
	for id, c := range cards(decodeUpdates(t, f.Updates(f.sid))) {
		live[id] = viewOf(c)
	}

	// session/close: the server's process is gone.
	if procs, _ := acptest.ProcsWithMarker(f.marker); len(procs) == 0 {
		t.Fatal("the server process is not found by its marker")
	}
	if err := f.Call(ctxT(t), "session/close", map[string]any{"sessionId": f.sid}, nil); err != nil {
		t.Fatal(err)
	}
	if left, err := acptest.WaitNoProcsWithMarker(ctxT(t), f.marker); err != nil {
		t.Fatalf("processes left after session/close: %v %v", left, err)
	}

	// A reload without the server draws the same cards.
	raw, err := f.loadSession(f.sid, f.cwd)
	if err != nil {
		t.Fatal(err)
	}
	replayed := cards(decodeUpdates(t, raw))
	for id, want := range live {
		got := replayed[id]
		if got == nil {
			t.Errorf("card %s not replayed", id)
			continue
		}
		if v := viewOf(got); !mcpSameView(v, want) {
			t.Errorf("card %s replayed as\n%+v\nlive it was\n%+v", id, v, want)
		}
	}
}

// mcpSameView compares cards as a client keeps them.
func mcpSameView(a, b cardView) bool {
	return a.Title == b.Title && a.Kind == b.Kind && a.Status == b.Status && a.RawInput == b.RawInput && slices.Equal(a.Content, b.Content)
}

// mcpCheckOffered checks the model was offered the server's tools with
// their schemas and descriptions, after the daemon's own.
func mcpCheckOffered(t *testing.T, req llmtest.Request) {
	t.Helper()
	names := req.ToolNames()
	for _, want := range []string{"bash", "mcp__test__echo", "mcp__test__slow", "mcp__test__write_note"} {
		if !slices.Contains(names, want) {
			t.Errorf("the model was not offered %s: %v", want, names)
		}
	}
	for _, tool := range req.Tools {
		if tool.Function.Name != "mcp__test__write_note" {
			continue
		}
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(tool.Function.Parameters, &schema); err != nil || schema.Type != "object" ||
			schema.Properties["name"] == nil || schema.Properties["text"] == nil || !slices.Contains(schema.Required, "text") {
			t.Errorf("write_note's schema: %s (%v)", tool.Function.Parameters, err)
		}
		if tool.Function.Description != "Write a note to a file." {
			t.Errorf("write_note's description: %q", tool.Function.Description)
		}
	}
}

// mcpCheckNoticeAfterReply fails unless the first update of sid holding
// text comes after the session/new reply that named sid.
func mcpCheckNoticeAfterReply(t *testing.T, inbound []json.RawMessage, sid, text string) {
	t.Helper()
	reply, notice := -1, -1
	for i, m := range inbound {
		s := string(m)
		switch {
		case reply < 0 && strings.Contains(s, `"result"`) && strings.Contains(s, `"sessionId":"`+sid+`"`):
			reply = i
		case notice < 0 && strings.Contains(s, `"session/update"`) && strings.Contains(s, text):
			notice = i
		}
	}
	if reply < 0 || notice < 0 || notice < reply {
		t.Errorf("the notice (line %d) must follow the session/new reply (line %d)", notice, reply)
	}
}

// writeFile writes content to path, creating its directory.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMCPReadOnlyModeAndReconnectOnLoad: read-only mode runs a read-only
// tool allowed by the user's allowance file and refuses a writing one; a
// reload that passes the server again reconnects it.
func TestMCPReadOnlyModeAndReconnectOnLoad(t *testing.T) {
	f := newMCPFixture(t, nil, "DSH_MODE=read-only")
	writeFile(t, filepath.Join(f.config, "dsh-acp", "mcp.json"), `{"allow":[{"server":"test","readOnlyTools":true}]}`)
	f.call("call_w", "mcp__test__write_note", `{"name":"n.txt","text":"x"}`, "end_turn")
	if got := f.resultFor("call_w"); !strings.Contains(got, `"read-only" mode`) {
		t.Errorf("a writing tool in read-only mode: the model read %q", got)
	}
	f.call("call_e", "mcp__test__echo", `{"text":"ro"}`, "end_turn")
	if got := f.resultFor("call_e"); got != "echo: ro" {
		t.Errorf("an allowed read-only tool: the model read %q", got)
	}
	// A long result is cut for the model and kept whole in a spill file.
	f.call("call_b", "mcp__test__big", `{"n":40000}`, "end_turn")
	got := f.resultFor("call_b")
	_, path, found := strings.Cut(got, "[output truncated; full output: ")
	path = strings.TrimSuffix(path, "]")
	if !found || !strings.HasPrefix(got, "line 0\n") || len([]rune(got)) > 30000 || !strings.HasPrefix(path, f.stateDir) {
		t.Errorf("a long result: %d characters, ending %q", len([]rune(got)), got[max(0, len(got)-200):])
	} else if whole, err := os.ReadFile(path); err != nil || len(whole) != 40000 {
		t.Errorf("the spill file holds %d bytes (%v)", len(whole), err)
	}
	if n := len(f.questions()); n != 0 {
		t.Errorf("%d questions in read-only mode", n)
	}
	if strings.Contains(f.recorded(), "call write_note") {
		t.Error("the refused call reached the server")
	}
	if err := f.Call(ctxT(t), "session/close", map[string]any{"sessionId": f.sid}, nil); err != nil {
		t.Fatal(err)
	}
	err := f.Call(ctxT(t), "session/load", map[string]any{"sessionId": f.sid, "cwd": f.cwd, "mcpServers": []any{f.stdioServer("test")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.call("call_e2", "mcp__test__echo", `{"text":"back"}`, "end_turn")
	if got := f.resultFor("call_e2"); got != "echo: back" {
		t.Errorf("after a reload with the server: the model read %q", got)
	}
}

// TestMCPHTTPServerE2E: a streamable HTTP server, started by the test,
// gets the client's headers; its tool runs and is carded; a cancel
// reaches it.
func TestMCPHTTPServerE2E(t *testing.T) {
	record := filepath.Join(t.TempDir(), "record")
	srv := mcptest.NewServer(mcptest.Options{Record: record, Dir: t.TempDir()})
	var mu sync.Mutex
	var sawHeader bool
	h := sdkmcp.NewStreamableHTTPHandler(func(*http.Request) *sdkmcp.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sawHeader = sawHeader || r.Header.Get("X-Mcp-Test") == "secret-value"
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	f := newMCPFixture(t, func(*mcpFixture) []any {
		return []any{map[string]any{"type": "http", "name": "web", "url": hs.URL + "/mcp",
			"headers": []map[string]string{{"name": "X-Mcp-Test", "value": "secret-value"}}}}
	})
	us := f.call("call_h", "mcp__web__echo", `{"text":"over http"}`, "end_turn")
	if got := f.resultFor("call_h"); got != "echo: over http" {
		t.Fatalf("the model read %q", got)
	}
	if v := viewOf(cards(us)["call_h"]); v.Title != "web: echo" || v.Kind != "read" || v.Status != "completed" {
		t.Errorf("card %+v", v)
	}
	mu.Lock()
	if !sawHeader {
		t.Error("the server never got the client's header")
	}
	mu.Unlock()

	f.model.Push(llmtest.Calls(llmtest.Call{ID: "call_s", Name: "mcp__web__slow", Args: `{"ms":60000}`}))
	reply := f.startTurn("take your time")
	waitRecorded(t, record, "call slow")
	if got := f.cancelAndWait(reply); got != "cancelled" {
		t.Fatalf("stopReason %q after the cancel", got)
	}
	waitRecorded(t, record, "cancelled slow")
	f.call("call_h2", "mcp__web__echo", `{"text":"again"}`, "end_turn")
	if got := f.resultFor("call_h2"); got != "echo: again" {
		t.Errorf("after the cancel the model read %q", got)
	}
}

// TestMCPAdvertisedCapabilities: the daemon says it takes HTTP servers.
func TestMCPAdvertisedCapabilities(t *testing.T) {
	d := startDaemon(t, acptest.ZedCapabilities(), nil)
	var init struct {
		AgentCapabilities struct {
			MCP struct {
				HTTP bool `json:"http"`
				SSE  bool `json:"sse"`
			} `json:"mcpCapabilities"`
		} `json:"agentCapabilities"`
	}
	if err := d.Call(ctxT(t), "initialize", acptest.InitializeParams(acptest.ZedCapabilities()), &init); err != nil {
		t.Fatal(err)
	}
	if c := init.AgentCapabilities.MCP; !c.HTTP || c.SSE {
		t.Errorf("mcpCapabilities %+v, want http only", c)
	}
}

// TestMCPServersDieWithTheDaemon: at stdin EOF the daemon stops every
// server it started, even one busy with a call, and exits 0.
func TestMCPServersDieWithTheDaemon(t *testing.T) {
	f := newMCPFixture(t, nil, "DSH_MODE=auto")
	f.model.Push(llmtest.Calls(llmtest.Call{ID: "call_s", Name: "mcp__test__slow", Args: `{"ms":60000}`}))
	reply := f.startTurn("take your time")
	waitRecorded(t, f.record, "call slow")
	if procs, _ := acptest.ProcsWithMarker(f.marker); len(procs) == 0 {
		t.Fatal("the server process is not found by its marker")
	}
	if err := f.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	if err := f.Wait(ctxT(t)); err != nil {
		t.Errorf("daemon exit: %v", err)
	}
	if left, err := acptest.WaitNoProcsWithMarker(ctxT(t), f.marker); err != nil {
		t.Fatalf("processes left after the daemon exited: %v %v", left, err)
	}
	select {
	case got := <-reply:
		if got != "cancelled" && !strings.HasPrefix(got, "error") {
			t.Errorf("the turn ended %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Error("the turn was never answered")
	}
}

// TestMCPToolListChangeBetweenTurns: a server that adds a tool announces
// it; the next turn offers it, and its first offer is journaled.
func TestMCPToolListChangeBetweenTurns(t *testing.T) {
	f := newMCPFixture(t, nil, "DSH_MODE=auto")
	f.call("call_g", "mcp__test__grow", `{}`, "end_turn")
	// The server announces the change on its own time (the SDK waits 10 ms);
	// the daemon logs its arrival.
	f.waitFor(func() bool { return strings.Contains(f.Stderr(), `"msg":"mcp tool list changed"`) })
	if slices.Contains(f.model.Requests()[0].ToolNames(), "mcp__test__grown") {
		t.Fatal("grown was offered before it existed")
	}
	f.call("call_n", "mcp__test__grown", `{}`, "end_turn")
	reqs := f.model.Requests()
	if !slices.Contains(reqs[len(reqs)-2].ToolNames(), "mcp__test__grown") {
		t.Errorf("the turn after the change did not offer grown: %v", reqs[len(reqs)-2].ToolNames())
	}
	if got := f.resultFor("call_n"); got != "grown" {
		t.Errorf("the new tool: the model read %q", got)
	}
	files, _ := filepath.Glob(filepath.Join(f.stateDir, "sessions", f.sid+".jsonl"))
	if len(files) != 1 {
		t.Fatalf("journal of %s not found", f.sid)
	}
	b, _ := os.ReadFile(files[0])
	if !strings.Contains(string(b), `"mcp.tool.mcp__test__grown"`) || !strings.Contains(string(b), `"mcp.tool.mcp__test__echo"`) {
		t.Errorf("the tools' Info is not journaled:\n%s", b)
	}
}

// TestMCPProjectAllowancesNeedTrust: a project's allowance file (which
// comes with the repository) lets nothing run until the user trusts its
// content; the question offers that, and afterwards it applies.
func TestMCPProjectAllowancesNeedTrust(t *testing.T) {
	f := newMCPFixture(t, nil)
	writeFile(t, filepath.Join(f.cwd, ".dsh-acp", "mcp.json"), `{"allow":[{"server":"test","tool":"write_note"}]}`)
	f.setAnswer("allow_always") // the first such option: trust the file
	f.call("call_1", "mcp__test__write_note", `{"name":"a.txt","text":"1"}`, "end_turn")
	qs := f.questions()
	if len(qs) != 1 || !strings.Contains(string(qs[0]), "Trust this project's MCP allowances and run: test: write_note") {
		t.Fatalf("questions %s", qs)
	}
	if got := f.resultFor("call_1"); got != "wrote 1 bytes to a.txt" {
		t.Errorf("the model read %q", got)
	}
	f.call("call_2", "mcp__test__write_note", `{"name":"b.txt","text":"2"}`, "end_turn")
	if n := len(f.questions()); n != 1 {
		t.Errorf("the trusted file's allowance still asks (%d questions)", n)
	}
	// An edit of the file asks again.
	writeFile(t, filepath.Join(f.cwd, ".dsh-acp", "mcp.json"), `{"allow":[{"server":"test","tool":"write_note"},{"server":"test","tool":"slow"}]}`)
	f.setAnswer("reject_once")
	f.call("call_3", "mcp__test__write_note", `{"name":"c.txt","text":"3"}`, "end_turn")
	if n := len(f.questions()); n != 2 {
		t.Errorf("an edited file was still trusted (%d questions)", n)
	}
}
