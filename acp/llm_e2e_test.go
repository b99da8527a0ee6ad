package acp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/llm/llmtest"
	"github.com/dsh-acp/dsh-acp/tools"
)

// These tests drive the real binary against a scripted fake model
// (llmtest): what the editor sees (cards, chunks, stop reasons) and what the
// model reads (the recorded requests) are both checked.

const e2eModel = "e2e-model"

// modelDaemon starts the daemon with a model at baseURL and the given API
// key, and opens a session in a fresh directory.
func modelDaemon(t *testing.T, caps map[string]any, args []string, baseURL, key string) (*daemon, string, string) {
	t.Helper()
	d := startDaemon(t, caps, args, "DSH_BASE_URL="+baseURL, "DSH_API_KEY="+key, "DSH_MODEL="+e2eModel)
	cwd := t.TempDir()
	return d, d.newSession(cwd), cwd
}

// newKey is a distinctive fake API key.
func newKey() string { return "sk-" + acptest.NewMarker() }

// turn runs one prompt and returns its stop reason and the updates it
// produced (every update of a turn precedes its reply).
func turn(t *testing.T, d *daemon, sid, text string) (string, []update) {
	t.Helper()
	before := len(d.Updates(sid))
	stop := d.prompt(sid, text)
	return stop, decodeUpdates(t, d.Updates(sid)[before:])
}

// promptAsync sends a prompt and delivers its stop reason (or the call's
// error text) on the returned channel.
func promptAsync(d *daemon, sid, text string) <-chan string {
	reply := make(chan string, 1)
	go func() {
		var r struct {
			StopReason string `json:"stopReason"`
		}
		if err := d.Call(context.Background(), "session/prompt", promptParams(sid, text), &r); err != nil {
			r.StopReason = "error: " + err.Error()
		}
		reply <- r.StopReason
	}()
	return reply
}

// awaitStop waits for an async prompt's stop reason.
func awaitStop(t *testing.T, reply <-chan string, within time.Duration) string {
	t.Helper()
	select {
	case got := <-reply:
		return got
	case <-time.After(within):
		t.Fatalf("prompt not answered within %v", within)
		return ""
	}
}

// cancelTurn sends session/cancel and returns when it was sent.
func cancelTurn(t *testing.T, d *daemon, sid string) time.Time {
	t.Helper()
	if err := d.Notify(ctxT(t), "session/cancel", map[string]any{"sessionId": sid}); err != nil {
		t.Fatal(err)
	}
	return time.Now()
}

// chunkTexts joins the text of the updates of kind.
func chunkTexts(us []update, kind string) string {
	var b strings.Builder
	for _, u := range us {
		if u.Kind == kind {
			b.WriteString(u.ChunkText)
		}
	}
	return b.String()
}

// cardSequence returns a turn's cards in the order they opened, failing
// unless each card got its final update before the next one opened and
// nothing followed a final update.
func cardSequence(t *testing.T, us []update) []*card {
	t.Helper()
	byID := cards(us)
	var order []*card
	closed := map[string]bool{}
	open := ""
	for _, u := range us {
		switch u.Kind {
		case "tool_call":
			if open != "" && !closed[open] {
				t.Errorf("card %s opened before card %s closed", u.ToolCallID, open)
			}
			open = u.ToolCallID
			order = append(order, byID[u.ToolCallID])
			if u.Status != "in_progress" {
				t.Errorf("card %s opened with status %q", u.ToolCallID, u.Status)
			}
		case "tool_call_update":
			switch {
			case byID[u.ToolCallID] == nil:
				t.Errorf("update for a card never opened: %+v", u)
			case closed[u.ToolCallID]:
				t.Errorf("an update follows card %s's final one: %+v", u.ToolCallID, u)
			case u.Status == "completed" || u.Status == "failed":
				closed[u.ToolCallID] = true
			}
		}
	}
	for _, c := range order {
		if c.final == nil {
			t.Errorf("card %s (%q) never closed", c.open.ToolCallID, c.open.Title)
		}
	}
	return order
}

// rawString decodes a JSON string (a card's rawInput).
func rawString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "(not a string: " + string(raw) + ")"
	}
	return s
}

// argsJSON is a tool call's arguments.
func argsJSON(v map[string]any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// toolResult is the content of the tool message answering call id.
func toolResult(t *testing.T, req llmtest.Request, id string) string {
	t.Helper()
	for _, m := range req.Messages {
		if m.Role == "tool" && m.ToolCallID == id {
			return m.Content
		}
	}
	t.Fatalf("no tool result for %s in the request:\n%s", id, req)
	return ""
}

// occurrences counts s in the contents of a request's messages.
func occurrences(req llmtest.Request, s string) int {
	n := 0
	for _, m := range req.Messages {
		n += strings.Count(m.Content, s)
	}
	return n
}

// checkConversation fails unless every tool call of the request's
// assistant messages is answered by exactly one tool message right after
// it, and every tool message answers such a call.
func checkConversation(t *testing.T, req llmtest.Request) {
	t.Helper()
	msgs := req.Messages
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role == "tool" {
			t.Errorf("message %d: a tool result (%s) answering no call:\n%s", i, m.ToolCallID, req)
			continue
		}
		if m.Role != "assistant" || len(m.ToolCalls) == 0 {
			continue
		}
		want := map[string]bool{}
		for _, c := range m.ToolCalls {
			want[c.ID] = true
		}
		for i+1 < len(msgs) && msgs[i+1].Role == "tool" {
			i++
			if !want[msgs[i].ToolCallID] {
				t.Errorf("message %d: tool result %s answers no pending call:\n%s", i, msgs[i].ToolCallID, req)
			}
			delete(want, msgs[i].ToolCallID)
		}
		if len(want) > 0 {
			t.Errorf("calls %v have no result:\n%s", want, req)
		}
	}
}

// gateModel fronts the fake model with a proxy that calls hold(n) before
// forwarding the n-th request (from 1); hold may block.
func gateModel(t *testing.T, srv *llmtest.Server, hold func(n int)) string {
	t.Helper()
	target, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1 // stream events as they come
	var n atomic.Int64
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hold(int(n.Add(1)))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(gate.Close)
	return gate.URL
}

// waitFile waits until path exists (a command said it got there).
func waitFile(t *testing.T, path string) {
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s never appeared", path)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The model runs a foreground command, starts a background task, reads it,
// kills it, reads the rest and answers. The editor sees a terminal card for
// the foreground run and generic cards for the rest; the model reads the
// documented result texts.
func TestModelDrivesBashTools(t *testing.T) {
	marker := acptest.NewMarker()
	fgCmd := "echo hi; exit 2"
	bgCmd := "export M=" + marker + "; echo line1; echo line2; echo line3; touch ready; sleep 600"
	fgArgs := argsJSON(map[string]any{"command": fgCmd, "description": "Print hi and fail"})
	bgArgs := argsJSON(map[string]any{"command": bgCmd, "description": "Print lines, then wait", "run_in_background": true})
	task := `{"task_id":"bash-1"}`
	srv := llmtest.New(t,
		llmtest.Calls(llmtest.Call{ID: "call_fg", Name: "bash", Args: fgArgs}),
		llmtest.Calls(llmtest.Call{ID: "call_bg", Name: "bash", Args: bgArgs}),
		llmtest.Calls(llmtest.Call{ID: "call_read", Name: "bash_output", Args: task}),
		llmtest.Calls(llmtest.Call{ID: "call_kill", Name: "bash_kill", Args: task}),
		llmtest.Calls(llmtest.Call{ID: "call_read2", Name: "bash_output", Args: task}),
		llmtest.Reply("All ", "done."),
	)
	var cwd atomic.Value
	// The first bash_output is asked for only once the task has printed.
	base := gateModel(t, srv, func(n int) {
		if n == 3 {
			waitFile(t, filepath.Join(cwd.Load().(string), "ready"))
		}
	})
	key := newKey()
	d := startDaemon(t, acptest.ZedCapabilities(), nil, "DSH_BASE_URL="+base, "DSH_API_KEY="+key, "DSH_MODEL="+e2eModel)
	dir := t.TempDir()
	cwd.Store(dir)
	sid := d.newSession(dir)

	stop, us := turn(t, d, sid, "run some commands")
	if stop != "end_turn" {
		t.Fatalf("stopReason %q", stop)
	}
	if left, err := acptest.WaitNoProcsWithMarker(ctxT(t), marker); err != nil {
		t.Errorf("the killed task survives %+v: %v", left, err)
	}

	// What the editor saw.
	if got := chunkTexts(us, "agent_message_chunk"); got != "All done." {
		t.Errorf("agent text %q", got)
	}
	seq := cardSequence(t, us)
	if len(seq) != 5 {
		t.Fatalf("%d cards, want 5: %+v", len(seq), us)
	}
	checkForegroundCard(t, seq[0], fgCmd, "Print hi and fail", dir)

	bg := seq[1]
	if bg.open.Title != bgCmd || bg.open.ToolKind != "execute" || rawString(bg.open.RawInput) != bgCmd ||
		bg.open.Meta.Info != nil {
		t.Errorf("background card opened as %+v", bg.open)
	}
	wantStart := `Started background task bash-1. Poll its output with bash_output {"task_id":"bash-1"}; stop it with bash_kill.`
	if bg.final == nil || bg.final.Status != "completed" || bg.final.Meta.Exit != nil ||
		!slices.Equal(bg.contentTexts(), []string{"Print lines, then wait", wantStart}) {
		t.Errorf("background card: final %+v, content %q", bg.final, bg.contentTexts())
	}
	for i, want := range []struct{ title, kind, text string }{
		{"Read output from background task bash-1", "read", "[status: running]"},
		{"Kill background task bash-1", "execute", "Killed background task bash-1 [status: killed]."},
		{"Read output from background task bash-1", "read", "[status: killed]"},
	} {
		c := seq[2+i]
		if c.open.Title != want.title || c.open.ToolKind != want.kind || rawString(c.open.RawInput) != "bash-1" {
			t.Errorf("card %d opened as %+v", 2+i, c.open)
		}
		if c.final == nil || c.final.Status != "completed" || !strings.Contains(strings.Join(c.contentTexts(), "\n"), want.text) {
			t.Errorf("card %d (%s): final %+v, content %q", 2+i, want.title, c.final, c.contentTexts())
		}
	}

	// What the model read.
	reqs := srv.Requests()
	if len(reqs) != 6 {
		t.Fatalf("%d model requests, want 6", len(reqs))
	}
	checkFirstRequest(t, reqs[0], key, dir)
	if got := toolResult(t, reqs[1], "call_fg"); got != "hi\n[exit code: 2]" {
		t.Errorf("foreground result %q", got)
	}
	if got := toolResult(t, reqs[2], "call_bg"); got != wantStart {
		t.Errorf("background start result %q", got)
	}
	read1 := toolResult(t, reqs[3], "call_read")
	if got := toolResult(t, reqs[4], "call_kill"); got != "Killed background task bash-1 [status: killed]." {
		t.Errorf("kill result %q", got)
	}
	read2 := toolResult(t, reqs[5], "call_read2")
	body1, ok1 := strings.CutSuffix(read1, "\n[status: running]")
	body2, ok2 := strings.CutSuffix(read2, "\n[status: killed]")
	if !ok1 || !ok2 {
		t.Fatalf("bash_output results lack their status line: %q, %q", read1, read2)
	}
	// The two reads return the output once, in order, whatever the capture
	// had caught up with at the first read.
	var all []string
	for _, b := range []string{body1, body2} {
		if b != "(no new output)" {
			all = append(all, b)
		}
	}
	if got := strings.Join(all, "\n"); got != "line1\nline2\nline3" {
		t.Errorf("output read in two parts %q + %q, want the three lines once", read1, read2)
	}
	for i, req := range reqs {
		checkConversation(t, req)
		if req.Model != e2eModel || !req.Stream {
			t.Errorf("request %d: model %q stream %v", i, req.Model, req.Stream)
		}
	}
	if n := occurrences(reqs[5], "Background task bash-1"); n > 1 {
		t.Errorf("the kill's notice reached the model %d times:\n%s", n, reqs[5])
	}
}

// checkForegroundCard checks a foreground bash run's terminal card in a
// client with Zed's terminal _meta.
func checkForegroundCard(t *testing.T, c *card, command, description, cwd string) {
	t.Helper()
	id := c.open.ToolCallID
	if c.open.Title != command || c.open.ToolKind != "execute" {
		t.Errorf("terminal card opened as %+v", c.open)
	}
	if c.open.Meta.Info == nil || c.open.Meta.Info.TerminalID != id || c.open.Meta.Info.Cwd != cwd {
		t.Errorf("terminal_info %+v", c.open.Meta.Info)
	}
	var items []struct {
		Type       string `json:"type"`
		TerminalID string `json:"terminalId"`
		Content    struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	_ = json.Unmarshal(c.open.Content, &items)
	if len(items) != 2 || items[0].Content.Text != description || items[1].Type != "terminal" || items[1].TerminalID != id {
		t.Errorf("terminal card content %s: want the description, then the terminal", c.open.Content)
	}
	if out := strings.Join(c.outputs, ""); out != "hi\n" {
		t.Errorf("terminal_output %q", c.outputs)
	}
	if c.final == nil || c.final.Status != "failed" || c.final.Meta.Exit == nil || c.final.Meta.Exit.TerminalID != id ||
		c.final.Meta.Exit.ExitCode == nil || *c.final.Meta.Exit.ExitCode != 2 {
		t.Errorf("terminal card final %+v", c.final)
	}
}

// checkFirstRequest checks what a turn's first request offers the model.
func checkFirstRequest(t *testing.T, req llmtest.Request, key, cwd string) {
	t.Helper()
	if got := req.Header.Get("Authorization"); got != "Bearer "+key {
		t.Errorf("Authorization header %q", got)
	}
	if got := req.ToolNames(); !slices.Equal(got, []string{"bash", "bash_output", "bash_kill"}) {
		t.Errorf("tools %q", got)
	}
	for _, tool := range req.Tools {
		if tool.Type != "function" || tool.Function.Description == "" || !json.Valid(tool.Function.Parameters) {
			t.Errorf("tool %s offered as %+v", tool.Function.Name, tool)
		}
	}
	if len(req.Messages) != 2 || req.Messages[0].Role != "system" || req.Messages[1].Role != "user" {
		t.Fatalf("messages:\n%s", req)
	}
	// The daemon's defaults: the section states them.
	section := tools.NewSet(nil, tools.Config{OutputLimit: 30000, CardOutputLimit: 2 << 20,
		DefaultTimeout: 120 * time.Second, MaxTimeout: 600 * time.Second}).PromptSection()
	system := req.Messages[0].Content
	if !strings.Contains(system, section) || !strings.Contains(section, "[exit code: N]") {
		t.Errorf("the system prompt lacks the tools' section:\n%s", system)
	}
	if !strings.Contains(system, cwd) {
		t.Errorf("the system prompt does not name the session's directory %s", cwd)
	}
}

// Reasoning streams as thought chunks, keep-alive comments are ignored, and
// an answer's reasoning is not sent back in later requests; a tool-call
// message's reasoning is (DeepSeek's thinking mode requires it).
func TestReasoningStreamsAndIsNotSentBack(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.Stream(llmtest.KeepAlive(), llmtest.Think("Let me "), llmtest.KeepAlive(), llmtest.Think("think."),
			llmtest.KeepAlive(), llmtest.Say("Hello"), llmtest.KeepAlive(), llmtest.Say(" there."), llmtest.Finish("stop")),
		llmtest.Stream(llmtest.Think("A command "), llmtest.Think("will tell."),
			llmtest.StartCall(0, "call_t", "bash", `{"command":"echo ok",`), llmtest.Args(0, `"description":"Say ok"}`),
			llmtest.Finish("tool_calls")),
		llmtest.Reply("It said ok."),
	)
	d, sid, _ := modelDaemon(t, acptest.ZedCapabilities(), nil, srv.URL(), newKey())

	stop, us := turn(t, d, sid, "hello")
	if stop != "end_turn" {
		t.Fatalf("stopReason %q", stop)
	}
	var kinds []string
	for _, u := range us {
		kinds = append(kinds, u.Kind+":"+u.ChunkText)
	}
	want := []string{"agent_thought_chunk:Let me ", "agent_thought_chunk:think.",
		"agent_message_chunk:Hello", "agent_message_chunk: there."}
	if !slices.Equal(kinds, want) {
		t.Errorf("updates %q, want %q", kinds, want)
	}

	if stop, _ := turn(t, d, sid, "run something"); stop != "end_turn" {
		t.Fatalf("second stopReason %q", stop)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	second := reqs[1]
	if len(second.Messages) != 4 || second.Messages[2].Role != "assistant" || second.Messages[2].Content != "Hello there." {
		t.Fatalf("second prompt's request:\n%s", second)
	}
	for i, r := range reqs[1:] {
		if strings.Contains(string(r.Raw), "think.") {
			t.Errorf("request %d sends back the first answer's reasoning:\n%s", i+2, r)
		}
	}
	third := reqs[2]
	var withCall *llmtest.Message
	for i := range third.Messages {
		if len(third.Messages[i].ToolCalls) > 0 {
			withCall = &third.Messages[i]
		}
	}
	if withCall == nil || withCall.ReasoningContent != "A command will tell." {
		t.Errorf("the tool-call message's reasoning is not sent back:\n%s", third)
	}
	if got := toolResult(t, third, "call_t"); got != "ok" {
		t.Errorf("tool result %q", got)
	}
}

// A background task that finishes between prompts is told to the model once,
// in the next turn's first request, before that turn's prompt.
func TestCompletionNoticeBetweenPrompts(t *testing.T) {
	bgCmd := `read x < go.fifo; echo "got $x"; exit 3`
	srv := llmtest.New(t,
		llmtest.Calls(llmtest.Call{ID: "call_bg", Name: "bash",
			Args: argsJSON(map[string]any{"command": bgCmd, "description": "Wait for a line", "run_in_background": true})}),
		llmtest.Reply("Started it."),
		llmtest.Reply("Noted."),
		llmtest.Reply("Still noted."),
	)
	d, sid, cwd := modelDaemon(t, acptest.ZedCapabilities(), nil, srv.URL(), newKey())
	fifo := filepath.Join(cwd, "go.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if stop, _ := turn(t, d, sid, "start a task"); stop != "end_turn" {
		t.Fatalf("stopReason %q", stop)
	}
	// Let the task finish now, between prompts. Opening the FIFO waits for
	// the task to open its end.
	wrote := make(chan error, 1)
	go func() { wrote <- os.WriteFile(fifo, []byte("go\n"), 0o600) }()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the task never opened its FIFO")
	}
	waitTaskFinished(t, d, "bash-1")

	if stop, _ := turn(t, d, sid, "anything new?"); stop != "end_turn" {
		t.Fatalf("second stopReason %q", stop)
	}
	if stop, _ := turn(t, d, sid, "and now?"); stop != "end_turn" {
		t.Fatalf("third stopReason %q", stop)
	}
	notice := tools.CompletionNotice(executor.TaskDone{ID: "bash-1", Command: bgCmd, Status: executor.Completed, ExitCode: 3})
	if !strings.Contains(notice, "(`read x < go.fifo; echo \"got $x\"; exit 3`) finished [status: completed, exit code: 3]") {
		t.Errorf("notice text %q", notice)
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	if n := occurrences(reqs[1], "Background task bash-1"); n != 0 {
		t.Errorf("a notice before the task finished:\n%s", reqs[1])
	}
	for i, r := range reqs[2:] {
		if n := occurrences(r, notice); n != 1 {
			t.Errorf("request %d carries the notice %d times, want once:\n%s", i+3, n, r)
		}
		if n := occurrences(r, "Background task bash-1"); n != 1 {
			t.Errorf("request %d mentions the task %d times:\n%s", i+3, n, r)
		}
	}
	last := reqs[2].Messages[len(reqs[2].Messages)-1]
	if last.Role != "user" || !strings.HasPrefix(last.Content, notice) || !strings.HasSuffix(last.Content, "anything new?") {
		t.Errorf("the notice should precede the prompt in the last message: %q", last.Content)
	}
}

// waitTaskFinished waits for the daemon's debug log to report the task's
// end; the completion listeners run right after that line.
func waitTaskFinished(t *testing.T, d *daemon, id string) {
	t.Helper()
	want := fmt.Sprintf(`"msg":"task finished","id":%q`, id)
	d.waitFor(func() bool { return strings.Contains(d.Stderr(), want) })
}

// Provider failures end the turn cleanly with a message naming the cause
// (no JSON-RPC error), transient ones are retried, and the daemon goes on
// serving. The API key never reaches the editor, the log or the journal,
// even when the provider echoes it.
func TestProviderErrorsEndTheTurnCleanly(t *testing.T) {
	tests := []struct {
		name     string
		script   []llmtest.Response
		want     string // in the turn's agent text
		requests int
	}{
		{"401 bad key", []llmtest.Response{llmtest.Error(401, "Authentication Fails, your api key: KEY is invalid")},
			"rejected the API key. Check DSH_API_KEY", 1},
		{"402 balance", []llmtest.Response{llmtest.Error(402, "Insufficient Balance")},
			"insufficient balance", 1},
		{"429 then success", []llmtest.Response{llmtest.Error(429, "Rate limit reached").With("Retry-After", "1"),
			llmtest.Reply("made it")}, "made it", 2},
		{"500 then success", []llmtest.Response{llmtest.Error(500, "internal error"), llmtest.Reply("made it")},
			"made it", 2},
		{"malformed SSE", []llmtest.Response{llmtest.Stream(llmtest.Say("partial "), llmtest.Raw("data: {oops\n\n"))},
			"could not be read", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := newKey()
			script := slices.Clone(tt.script)
			for i, r := range script {
				script[i].Body = strings.ReplaceAll(r.Body, "KEY", key)
			}
			srv := llmtest.New(t, append(script, llmtest.Reply("recovered"))...)
			d, sid, _ := modelDaemon(t, acptest.ZedCapabilities(), nil, srv.URL(), key)
			start := time.Now()
			stop, us := turn(t, d, sid, "hi")
			t.Logf("turn took %v", time.Since(start))
			if stop != "end_turn" {
				t.Fatalf("stopReason %q", stop)
			}
			text := chunkTexts(us, "agent_message_chunk")
			if !strings.Contains(text, tt.want) {
				t.Errorf("agent text %q lacks %q", text, tt.want)
			}
			if tt.want == "made it" && text != "made it" {
				t.Errorf("a retried success shows %q", text)
			}
			if n := len(srv.Requests()); n != tt.requests {
				t.Errorf("%d requests, want %d", n, tt.requests)
			}
			stop, us = turn(t, d, sid, "again")
			if got := chunkTexts(us, "agent_message_chunk"); stop != "end_turn" || got != "recovered" {
				t.Errorf("next prompt: %q, %q", stop, got)
			}
			checkConversation(t, srv.Last())
			assertKeyHidden(t, d, key)
		})
	}
}

// assertKeyHidden fails if key appears on the daemon's stdout, stderr or in
// its state directory.
func assertKeyHidden(t *testing.T, d *daemon, key string) {
	t.Helper()
	for _, m := range d.Inbound() {
		if strings.Contains(string(m), key) {
			t.Errorf("the API key reached the client: %s", m)
		}
	}
	if strings.Contains(d.Stderr(), key) {
		t.Errorf("the API key is in the log:\n%s", d.Stderr())
	}
	err := filepath.WalkDir(d.stateDir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), key) {
			t.Errorf("the API key is in %s", path)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// A cancel while the model streams (here mid tool call) answers the prompt
// "cancelled" at once; the next turn's request keeps the partial text and
// no half-made call.
func TestCancelWhileStreaming(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.Response{Chunks: []llmtest.Chunk{llmtest.Say("Let me look. "),
			llmtest.StartCall(0, "call_p", "bash", `{"command":"ec`)}, Stall: true},
		llmtest.Reply("Fresh start."),
	)
	d, sid, _ := modelDaemon(t, acptest.ZedCapabilities(), nil, srv.URL(), newKey())
	reply := promptAsync(d, sid, "look around")
	if _, err := d.WaitUpdate(ctxT(t), sid, func(u json.RawMessage) bool {
		return acptest.UpdateKind(u) == "agent_message_chunk"
	}); err != nil {
		t.Fatal(err)
	}
	sent := cancelTurn(t, d, sid)
	if got := awaitStop(t, reply, 10*time.Second); got != "cancelled" {
		t.Fatalf("stopReason %q", got)
	}
	t.Logf("cancel answered in %v", time.Since(sent))
	if n := d.count(sid, "tool_call", ""); n != 0 {
		t.Errorf("%d cards opened for a call that never finished streaming", n)
	}

	stop, us := turn(t, d, sid, "try again")
	if got := chunkTexts(us, "agent_message_chunk"); stop != "end_turn" || got != "Fresh start." {
		t.Fatalf("next prompt: %q, %q", stop, got)
	}
	req := srv.Last()
	checkConversation(t, req)
	var roles []string
	for _, m := range req.Messages {
		roles = append(roles, m.Role)
		if len(m.ToolCalls) > 0 {
			t.Errorf("a call that never finished streaming was kept:\n%s", req)
		}
	}
	if !slices.Equal(roles, []string{"system", "user", "assistant", "user"}) || req.Messages[2].Content != "Let me look. " {
		t.Errorf("history after the cancel:\n%s", req)
	}
}

// A cancel while the model's command runs kills its process group, fails the
// card, ends the turn "cancelled", and the model later reads a cancelled
// result for that call.
func TestCancelWhileToolRuns(t *testing.T) {
	marker := acptest.NewMarker()
	cmd := "export M=" + marker + "; sleep 600"
	srv := llmtest.New(t,
		llmtest.Calls(llmtest.Call{ID: "call_s", Name: "bash", Args: argsJSON(map[string]any{"command": cmd, "description": "Wait a long time"})}),
		llmtest.Reply("Understood."),
	)
	d, sid, _ := modelDaemon(t, acptest.ZedCapabilities(), nil, srv.URL(), newKey())
	reply := promptAsync(d, sid, "wait")
	if _, err := d.WaitUpdate(ctxT(t), sid, func(u json.RawMessage) bool { return acptest.UpdateKind(u) == "tool_call" }); err != nil {
		t.Fatal(err)
	}
	waitProcs(t, marker, 1)
	sent := cancelTurn(t, d, sid)
	if got := awaitStop(t, reply, 10*time.Second); got != "cancelled" {
		t.Fatalf("stopReason %q", got)
	}
	t.Logf("cancel answered in %v", time.Since(sent))
	if left, err := acptest.WaitNoProcsWithMarker(ctxT(t), marker); err != nil {
		t.Fatalf("survivors %+v: %v", left, err)
	}
	c := onlyCard(t, decodeUpdates(t, d.Updates(sid)))
	if c.open.Title != cmd || c.final == nil || c.final.Status != "failed" || c.final.Meta.Exit == nil {
		t.Fatalf("card: open %+v final %+v", c.open, c.final)
	}

	if stop, _ := turn(t, d, sid, "what happened?"); stop != "end_turn" {
		t.Fatalf("next stopReason %q", stop)
	}
	req := srv.Last()
	checkConversation(t, req)
	got := toolResult(t, req, "call_s")
	if !strings.Contains(got, "cancelled: the user stopped the turn while this call ran") {
		t.Errorf("the cancelled call's result reads %q", got)
	}
	t.Logf("cancelled result: %q", got)
}

// Closing stdin while a background task runs ends the daemon promptly with
// status 0, and takes the task's whole process group with it.
func TestStdinEOFWithBackgroundTask(t *testing.T) {
	marker := acptest.NewMarker()
	cmd := "export M=" + marker + "; sleep 600 & sleep 600"
	srv := llmtest.New(t,
		llmtest.Calls(llmtest.Call{ID: "call_bg", Name: "bash",
			Args: argsJSON(map[string]any{"command": cmd, "description": "Sleep in the background", "run_in_background": true})}),
		llmtest.Reply("Started."),
	)
	d, sid, _ := modelDaemon(t, acptest.ZedCapabilities(), nil, srv.URL(), newKey())
	if stop, _ := turn(t, d, sid, "start it"); stop != "end_turn" {
		t.Fatalf("stopReason %q", stop)
	}
	waitProcs(t, marker, 2)
	start := time.Now()
	if err := d.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	err := d.Wait(ctxT(t))
	took := time.Since(start)
	t.Logf("daemon exited %v after stdin closed", took)
	if err != nil {
		t.Errorf("daemon exit: %v", err)
	}
	if took >= 5*time.Second {
		t.Errorf("daemon took %v to exit", took)
	}
	if left, err := acptest.WaitNoProcsWithMarker(ctxT(t), marker); err != nil {
		t.Errorf("survivors %+v: %v", left, err)
	}
}

// --max-turn-requests bounds a turn whose model keeps calling tools.
func TestMaxTurnRequests(t *testing.T) {
	call := func(id string) llmtest.Response {
		return llmtest.Calls(llmtest.Call{ID: id, Name: "bash", Args: `{"command":"true","description":"Do nothing"}`})
	}
	srv := llmtest.New(t, call("call_1"), call("call_2"), call("call_3"))
	d, sid, _ := modelDaemon(t, acptest.ZedCapabilities(), []string{"--max-turn-requests", "2"}, srv.URL(), newKey())
	stop, us := turn(t, d, sid, "loop forever")
	if stop != "max_turn_requests" {
		t.Fatalf("stopReason %q", stop)
	}
	if n := len(srv.Requests()); n != 2 || srv.Remaining() != 1 {
		t.Errorf("%d requests (%d responses left), want 2", n, srv.Remaining())
	}
	if seq := cardSequence(t, us); len(seq) != 2 {
		t.Errorf("%d cards, want 2", len(seq))
	}
	srv.Push(llmtest.Reply("Stopped."))
	if stop, _ := turn(t, d, sid, "go on"); stop != "end_turn" {
		t.Fatalf("next stopReason %q", stop)
	}
	req := srv.Last()
	checkConversation(t, req)
	if got := toolResult(t, req, "call_2"); got != "(no output)" {
		t.Errorf("the last call's result %q", got)
	}
}

// A call to an unknown tool, or with arguments that are not a JSON object or
// lack a required field, is answered with an error result the model reads
// in its next request; the turn goes on.
func TestMalformedToolCalls(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.Calls(
			llmtest.Call{ID: "call_u", Name: "read_file", Args: `{"path":"x"}`},
			llmtest.Call{ID: "call_j", Name: "bash", Args: `{"command": "ls"`},
			llmtest.Call{ID: "call_m", Name: "bash", Args: `{"description":"List files"}`},
		),
		llmtest.Reply("I will do better."),
	)
	d, sid, _ := modelDaemon(t, acptest.ZedCapabilities(), nil, srv.URL(), newKey())
	stop, us := turn(t, d, sid, "go")
	if stop != "end_turn" {
		t.Fatalf("stopReason %q", stop)
	}
	if got := chunkTexts(us, "agent_message_chunk"); got != "I will do better." {
		t.Errorf("agent text %q", got)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	req := reqs[1]
	checkConversation(t, req)
	wants := map[string]string{
		"call_u": `unknown tool "read_file"; the tools you can call are: bash, bash_output, bash_kill`,
		"call_j": "the arguments of this bash call are not a JSON object: {\"command\": \"ls\"\nCall the tool again with a JSON object that matches its schema.",
		"call_m": `invalid arguments: missing required field "command"`,
	}
	for id, want := range wants {
		if got := toolResult(t, req, id); got != want {
			t.Errorf("%s result %q, want %q", id, got, want)
		}
	}
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			if c.ID == "call_j" && c.Function.Arguments != `{"command": "ls"` {
				t.Errorf("the malformed arguments are sent back as %q", c.Function.Arguments)
			}
		}
	}
	seq := cardSequence(t, us)
	if len(seq) != 3 {
		t.Fatalf("%d cards, want 3", len(seq))
	}
	for i, title := range []string{"read_file", "bash", "bash"} {
		c := seq[i]
		if c.open.Title != title || c.open.Meta.Info != nil || c.final == nil || c.final.Status != "failed" {
			t.Errorf("card %d: open %+v final %+v", i, c.open, c.final)
		}
	}
}
