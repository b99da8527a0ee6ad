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
	"github.com/dsh-acp/dsh-acp/internal/eventually"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
	"github.com/dsh-acp/dsh-acp/tools"
)

// These tests drive the real binary against a scripted fake model
// (llmtest): what the editor sees (cards, chunks, stop reasons) and what the
// model reads (the recorded requests) are both checked. Helpers are methods
// of llmFixture or carry an llm prefix, so they cannot clash with other
// files of the package.

const llmModelName = "e2e-model"

// llmFixture is the daemon talking to a fake model, with one session open.
type llmFixture struct {
	*daemon
	t        *testing.T
	key      string // the API key the daemon was given
	sid, cwd string
}

// llmOptions tune newLLMFixture; zero fields take the defaults.
type llmOptions struct {
	caps    map[string]any // Zed's capabilities
	args    []string
	env     []string
	baseURL string // the fake's URL
	cwd     string // a fresh directory
	key     string // a fresh "sk-…" key
}

// newLLMFixture starts the daemon with srv as its model, a fresh API key and
// one session.
func newLLMFixture(t *testing.T, srv *llmtest.Server, o llmOptions) *llmFixture {
	t.Helper()
	if o.caps == nil {
		o.caps = acptest.ZedCapabilities()
	}
	if o.baseURL == "" {
		o.baseURL = srv.URL()
	}
	if o.cwd == "" {
		o.cwd = t.TempDir()
	}
	if o.key == "" {
		o.key = llmNewKey()
	}
	env := append([]string{"DSH_BASE_URL=" + o.baseURL, "DSH_API_KEY=" + o.key, "DSH_MODEL=" + llmModelName}, o.env...)
	d := startDaemon(t, o.caps, o.args, env...)
	t.Cleanup(func() { llmCheckExit(t, d) })
	return &llmFixture{daemon: d, t: t, key: o.key, sid: d.newSession(o.cwd), cwd: o.cwd}
}

// llmCheckExit ends the daemon as the editor does, by closing its stdin,
// and fails unless it exits 0 without a data race report (with
// ACPTEST_RACE=1 the daemon is race-enabled). It runs before acptest's own
// cleanup, which then finds the daemon gone.
func llmCheckExit(t *testing.T, d *daemon) {
	t.Helper()
	_ = d.CloseStdin()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Wait(ctx); err != nil {
		t.Errorf("daemon exit: %v", err)
	}
	if strings.Contains(d.Stderr(), "DATA RACE") {
		t.Errorf("the daemon reported a data race:\n%s", d.Stderr())
	}
}

// llmNewKey is a distinctive fake API key.
func llmNewKey() string { return "sk-" + acptest.NewMarker() }

// turn runs one prompt and returns its stop reason and the updates it
// produced (every update of a turn precedes its reply).
func (f *llmFixture) turn(text string) (string, []update) {
	f.t.Helper()
	before := len(f.Updates(f.sid))
	stop := f.prompt(f.sid, text)
	return stop, decodeUpdates(f.t, f.Updates(f.sid)[before:])
}

// mustTurn runs one prompt that must end with stop reason want.
func (f *llmFixture) mustTurn(text, want string) []update {
	f.t.Helper()
	stop, us := f.turn(text)
	if stop != want {
		f.t.Fatalf("prompt %q: stopReason %q, want %q", text, stop, want)
	}
	return us
}

// startTurn sends a prompt without waiting; the channel delivers its stop
// reason (or the call's error text).
func (f *llmFixture) startTurn(text string) <-chan string {
	reply := make(chan string, 1)
	go func() {
		var r struct {
			StopReason string `json:"stopReason"`
		}
		if err := f.Call(context.Background(), "session/prompt", promptParams(f.sid, text), &r); err != nil {
			r.StopReason = "error: " + err.Error()
		}
		reply <- r.StopReason
	}()
	return reply
}

// waitKind waits for the session's first update of kind.
func (f *llmFixture) waitKind(kind string) {
	f.t.Helper()
	if _, err := f.WaitUpdate(ctxT(f.t), f.sid, func(u json.RawMessage) bool { return acptest.UpdateKind(u) == kind }); err != nil {
		f.t.Fatal(err)
	}
}

// cancelAndWait cancels the session's turn and returns the stop reason of
// reply, failing when it takes more than 10 s.
func (f *llmFixture) cancelAndWait(reply <-chan string) string {
	f.t.Helper()
	if err := f.Notify(ctxT(f.t), "session/cancel", map[string]any{"sessionId": f.sid}); err != nil {
		f.t.Fatal(err)
	}
	sent := time.Now()
	select {
	case got := <-reply:
		f.t.Logf("cancel answered in %v", time.Since(sent))
		return got
	case <-time.After(10 * time.Second):
		f.t.Fatal("prompt not answered within 10s of the cancel")
		return ""
	}
}

// waitTaskFinished waits for the daemon's debug log to report the task's
// end; the executor runs its completion listeners right after that line.
func (f *llmFixture) waitTaskFinished(id string) {
	f.t.Helper()
	want := llmTaskFinishedLine(id)
	f.waitFor(func() bool { return strings.Contains(f.Stderr(), want) })
}

// llmTaskFinishedLine is the part of the executor's debug log line that
// reports a background task's end.
func llmTaskFinishedLine(id string) string {
	return fmt.Sprintf(`"msg":"task finished","id":%q`, id)
}

// assertKeyHidden fails if the API key appears on the daemon's stdout,
// stderr or anywhere in its state directory.
func (f *llmFixture) assertKeyHidden() {
	t := f.t
	t.Helper()
	for _, m := range f.Inbound() {
		if strings.Contains(string(m), f.key) {
			t.Errorf("the API key reached the client: %s", m)
		}
	}
	if strings.Contains(f.Stderr(), f.key) {
		t.Errorf("the API key is in the log:\n%s", f.Stderr())
	}
	err := filepath.WalkDir(f.stateDir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), f.key) {
			t.Errorf("the API key is in %s", path)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// llmChunks joins the text of the updates of kind.
func llmChunks(us []update, kind string) string {
	var b strings.Builder
	for _, u := range us {
		if u.Kind == kind {
			b.WriteString(u.ChunkText)
		}
	}
	return b.String()
}

// llmCardSequence returns a turn's cards in the order they opened, failing
// unless each opened in_progress (or pending, to be asked about), got its final update before the next one
// opened, and had no update after its final one.
func llmCardSequence(t *testing.T, us []update) []*card {
	t.Helper()
	byID := cards(us)
	var order []*card
	closed := map[string]bool{}
	open := ""
	for _, u := range us {
		if isChangeCard(u.ToolCallID) {
			continue // a command's change card, drawn once and complete (internal/changes)
		}
		switch u.Kind {
		case "tool_call":
			if open != "" && !closed[open] {
				t.Errorf("card %s opened before card %s closed", u.ToolCallID, open)
			}
			open = u.ToolCallID
			order = append(order, byID[u.ToolCallID])
			if u.Status != "in_progress" && u.Status != "pending" { // pending: the user is asked first
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

// llmRawString decodes a JSON string (a card's rawInput).
func llmRawString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "(not a string: " + string(raw) + ")"
	}
	return s
}

// llmArgs is a tool call's arguments as JSON.
func llmArgs(v map[string]any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// llmBash is a model's bash call.
func llmBash(id, command, description string, background bool) llmtest.Call {
	args := map[string]any{"command": command, "description": description}
	if background {
		args["run_in_background"] = true
	}
	return llmtest.Call{ID: id, Name: "bash", Args: llmArgs(args)}
}

// llmToolResult is the content of the tool message answering call id.
func llmToolResult(t *testing.T, req llmtest.Request, id string) string {
	t.Helper()
	for _, m := range req.Messages {
		if m.Role == "tool" && m.ToolCallID == id {
			return m.Content
		}
	}
	t.Fatalf("no tool result for %s in the request:\n%s", id, req)
	return ""
}

// llmCount counts s in the contents of a request's messages.
func llmCount(req llmtest.Request, s string) int {
	n := 0
	for _, m := range req.Messages {
		n += strings.Count(m.Content, s)
	}
	return n
}

// llmCheckConversation fails unless every tool call of the request's
// assistant messages is answered by exactly one tool message right after
// it, and every tool message answers such a call.
func llmCheckConversation(t *testing.T, req llmtest.Request) {
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

// llmGate fronts the fake model with a proxy that calls hold(n) before
// forwarding the n-th chat request (from 1; the models list is not
// counted); hold may block.
func llmGate(t *testing.T, srv *llmtest.Server, hold func(n int)) string {
	t.Helper()
	target, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1 // pass events on as they come
	var n atomic.Int64
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			hold(int(n.Add(1)))
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(gate.Close)
	return gate.URL
}

// llmWaitFile waits until path exists (a command got that far).
func llmWaitFile(t *testing.T, path string) {
	t.Helper()
	eventually.True(t, 15*time.Second, func() bool { _, err := os.Stat(path); return err == nil }, "%s never appeared", path)
}

// The model runs a foreground command, starts a background task, reads it,
// kills it, reads the rest and answers. The editor sees a terminal card for
// the foreground run and generic cards for the rest; the model reads the
// documented result texts.
func TestE2EModelDrivesBashTools(t *testing.T) {
	marker := acptest.NewMarker()
	fgCmd := "echo hi; exit 2"
	bgCmd := "export M=" + marker + "; echo line1; echo line2; echo line3; touch ready; sleep 600"
	task := `{"task_id":"bash-1"}`
	srv := llmtest.New(t,
		llmtest.Calls(llmBash("call_fg", fgCmd, "Print hi and fail", false)),
		llmtest.Calls(llmBash("call_bg", bgCmd, "Print lines, then wait", true)),
		llmtest.Calls(llmtest.Call{ID: "call_read", Name: "bash_output", Args: task}),
		llmtest.Calls(llmtest.Call{ID: "call_kill", Name: "bash_kill", Args: task}),
		llmtest.Calls(llmtest.Call{ID: "call_read2", Name: "bash_output", Args: task}),
		llmtest.Reply("All ", "done."),
	)
	cwd := t.TempDir()
	// The first bash_output is asked for only once the task has printed.
	base := llmGate(t, srv, func(n int) {
		if n == 3 {
			llmWaitFile(t, filepath.Join(cwd, "ready"))
		}
	})
	f := newLLMFixture(t, srv, llmOptions{baseURL: base, cwd: cwd})
	us := f.mustTurn("run some commands", "end_turn")
	if left, err := acptest.WaitNoProcsWithMarker(ctxT(t), marker); err != nil {
		t.Errorf("the killed task survives %+v: %v", left, err)
	}

	// What the editor saw.
	if got := llmChunks(us, "agent_message_chunk"); got != "All done." {
		t.Errorf("agent text %q", got)
	}
	seq := llmCardSequence(t, us)
	if len(seq) != 5 {
		t.Fatalf("%d cards, want 5: %+v", len(seq), us)
	}
	llmCheckTerminalCard(t, seq[0], fgCmd, "Print hi and fail", cwd)
	bg := seq[1]
	if bg.open.Title != bgCmd || bg.open.ToolKind != "execute" || llmRawString(bg.open.RawInput) != bgCmd ||
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
		if c.open.Title != want.title || c.open.ToolKind != want.kind || llmRawString(c.open.RawInput) != "bash-1" {
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
	f.checkFirstRequest(reqs[0])
	if got := llmToolResult(t, reqs[1], "call_fg"); got != "hi\n[exit code: 2]" {
		t.Errorf("foreground result %q", got)
	}
	if got := llmToolResult(t, reqs[2], "call_bg"); got != wantStart {
		t.Errorf("background start result %q", got)
	}
	if got := llmToolResult(t, reqs[4], "call_kill"); got != "Killed background task bash-1 [status: killed]." {
		t.Errorf("kill result %q", got)
	}
	read1 := llmToolResult(t, reqs[3], "call_read")
	read2 := llmToolResult(t, reqs[5], "call_read2")
	body1, ok1 := strings.CutSuffix(read1, "\n[status: running]")
	body2, ok2 := strings.CutSuffix(read2, "\n[status: killed]")
	if !ok1 || !ok2 {
		t.Fatalf("bash_output results lack their status line: %q, %q", read1, read2)
	}
	// Between them, the two reads return the output once, in order, however
	// far the capture had got at the first read.
	var parts []string
	for _, b := range []string{body1, body2} {
		if b != "(no new output)" {
			parts = append(parts, b)
		}
	}
	if got := strings.Join(parts, "\n"); got != "line1\nline2\nline3" {
		t.Errorf("output read in two parts %q + %q, want the three lines once", read1, read2)
	}
	for i, req := range reqs {
		llmCheckConversation(t, req)
		if req.Model != llmModelName || !req.Stream {
			t.Errorf("request %d: model %q stream %v", i, req.Model, req.Stream)
		}
	}
	// The kill's own completion notice may or may not have been queued by
	// the last request; it never arrives twice.
	if n := llmCount(reqs[5], "Background task bash-1"); n > 1 {
		t.Errorf("the kill's notice reached the model %d times:\n%s", n, reqs[5])
	}
	f.assertKeyHidden()
}

// llmCheckTerminalCard checks a foreground bash run's terminal card (exit
// code 2, output "hi\n") in a client with Zed's terminal _meta.
func llmCheckTerminalCard(t *testing.T, c *card, command, description, cwd string) {
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
func (f *llmFixture) checkFirstRequest(req llmtest.Request) {
	t := f.t
	t.Helper()
	if got := req.Header.Get("Authorization"); got != "Bearer "+f.key {
		t.Errorf("Authorization header %q", got)
	}
	if got := req.ToolNames(); !slices.Equal(got, []string{"bash", "bash_output", "bash_kill", "todo_write"}) {
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
	// The section states the daemon's default limits.
	section := tools.NewBash(nil, tools.Config{OutputLimit: 30000, CardOutputLimit: 2 << 20,
		DefaultTimeout: 120 * time.Second, MaxTimeout: 600 * time.Second}).PromptSection(tools.Session{Level: autoLevel(t)})
	system := req.Messages[0].Content
	if !strings.Contains(system, section) || !strings.Contains(section, "[exit code: N]") {
		t.Errorf("the system prompt lacks the tools' section:\n%s", system)
	}
	if !strings.Contains(system, f.cwd) {
		t.Errorf("the system prompt does not name the session's directory %s", f.cwd)
	}
}

// Without Zed's _meta the model's foreground run is a card whose content is
// the description and the output in a console block.
func TestE2EModelBashPlainClient(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.Calls(llmBash("call_fg", "printf 'a\\nb\\n'; exit 1", "Print two lines", false)),
		llmtest.Reply("ok"),
	)
	f := newLLMFixture(t, srv, llmOptions{caps: acptest.PlainCapabilities()})
	us := f.mustTurn("go", "end_turn")
	c := onlyCard(t, us)
	for _, u := range append([]update{c.open}, c.updates...) {
		if u.Meta.Info != nil || u.Meta.Output != nil || u.Meta.Exit != nil {
			t.Errorf("terminal _meta sent to a client without the capability: %+v", u)
		}
	}
	want := []string{"Print two lines", "```console\na\nb\ndsh-acp: exit 1\n```"}
	if c.final == nil || c.final.Status != "failed" || !slices.Equal(c.contentTexts(), want) {
		t.Errorf("final %+v content %q, want %q", c.final, c.contentTexts(), want)
	}
	if got := llmToolResult(t, srv.Last(), "call_fg"); got != "a\nb\n[exit code: 1]" {
		t.Errorf("result %q", got)
	}
}

// Reasoning streams as thought chunks, keep-alive comments are ignored, and
// an answer's reasoning is not sent back in later requests; a tool-call
// message's reasoning is (DeepSeek's thinking mode requires it).
func TestE2EModelReasoning(t *testing.T) {
	// A long keep-alive wait: more comment lines than go-openai's default
	// limit of 300 empty messages.
	wait := slices.Repeat([]llmtest.Chunk{llmtest.KeepAlive()}, 400)
	first := append(wait, llmtest.Think("Let me "), llmtest.KeepAlive(), llmtest.Think("think."),
		llmtest.KeepAlive(), llmtest.Say("Hello"), llmtest.KeepAlive(), llmtest.Say(" there."), llmtest.Finish("stop"))
	srv := llmtest.New(t,
		llmtest.Stream(first...),
		llmtest.Stream(llmtest.Think("A command "), llmtest.Think("will tell."),
			llmtest.StartCall(0, "call_t", "bash", `{"command":"echo ok",`), llmtest.Args(0, `"description":"Say ok"}`),
			llmtest.Finish("tool_calls")),
		llmtest.Reply("It said ok."),
	)
	f := newLLMFixture(t, srv, llmOptions{})
	us := f.mustTurn("hello", "end_turn")
	var got []string
	for _, u := range us {
		got = append(got, u.Kind+":"+u.ChunkText)
	}
	want := []string{"session_info_update:", "agent_thought_chunk:Let me ", "agent_thought_chunk:think.",
		"agent_message_chunk:Hello", "agent_message_chunk: there.", "usage_update:"}
	if !slices.Equal(got, want) {
		t.Errorf("updates %q, want %q", got, want)
	}

	f.mustTurn("run something", "end_turn")
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
	if got := llmToolResult(t, third, "call_t"); got != "ok" {
		t.Errorf("tool result %q", got)
	}
}

// A background task that finishes between prompts is told to the model once,
// in the next turn's first request, before that turn's prompt; later
// requests keep it in the history without repeating it.
func TestE2EModelCompletionNotice(t *testing.T) {
	bgCmd := `read x < go.fifo; echo "got $x"; exit 3`
	srv := llmtest.New(t,
		llmtest.Calls(llmBash("call_bg", bgCmd, "Wait for a line", true)),
		llmtest.Reply("Started it."),
		llmtest.Reply("Noted."),
		llmtest.Reply("Still noted."),
	)
	f := newLLMFixture(t, srv, llmOptions{})
	fifo := filepath.Join(f.cwd, "go.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	f.mustTurn("start a task", "end_turn")
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
	f.waitTaskFinished("bash-1")
	f.mustTurn("anything new?", "end_turn")
	f.mustTurn("and now?", "end_turn")

	notice := tools.CompletionNotice(executor.TaskDone{ID: "bash-1", Command: bgCmd, Status: executor.Completed, ExitCode: 3})
	if !strings.Contains(notice, "(`read x < go.fifo; echo \"got $x\"; exit 3`) finished [status: completed, exit code: 3]") {
		t.Errorf("notice text %q", notice)
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	if n := llmCount(reqs[1], "Background task bash-1"); n != 0 {
		t.Errorf("a notice before the task finished:\n%s", reqs[1])
	}
	for i, r := range reqs[2:] {
		if n := llmCount(r, notice); n != 1 {
			t.Errorf("request %d carries the notice %d times, want once:\n%s", i+3, n, r)
		}
		if n := llmCount(r, "Background task bash-1"); n != 1 {
			t.Errorf("request %d mentions the task %d times:\n%s", i+3, n, r)
		}
	}
	last := reqs[2].Messages[len(reqs[2].Messages)-1]
	if last.Role != "user" || !strings.HasPrefix(last.Content, notice) || !strings.HasSuffix(last.Content, "anything new?") {
		t.Errorf("the notice should come just before the prompt: %q", last.Content)
	}
}

// A background task that finishes while a turn runs is told to the model in
// the turn's next request, after the tool results it followed.
func TestE2EModelCompletionNoticeMidTurn(t *testing.T) {
	// The task makes its FIFO itself: at workspace a command may write to
	// a FIFO a sandboxed command made, not to one of the host's (ipcguard).
	bgCmd := "mkfifo go.fifo && read x < go.fifo"
	srv := llmtest.New(t,
		llmtest.Calls(llmBash("call_bg", bgCmd, "Wait for a line", true)),
		// The release returns once the test has seen the task finish.
		llmtest.Calls(llmBash("call_go", "until [ -p go.fifo ]; do sleep 0.01; done; echo go > go.fifo; read y < back.fifo", "Release the task", false)),
		llmtest.Reply("It finished."),
		llmtest.Reply("Yes."),
	)
	f := newLLMFixture(t, srv, llmOptions{})
	if err := syscall.Mkfifo(filepath.Join(f.cwd, "back.fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	finished := llmTaskFinishedLine("bash-1")
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if eventually.Poll(ctx, func() bool { return strings.Contains(f.Stderr(), finished) }) != nil {
			t.Error("the task never finished")
			return
		}
		if err := os.WriteFile(filepath.Join(f.cwd, "back.fifo"), []byte("ok\n"), 0o600); err != nil {
			t.Error(err)
		}
	}()
	f.mustTurn("start and release a task", "end_turn")
	f.mustTurn("done?", "end_turn")

	notice := tools.CompletionNotice(executor.TaskDone{ID: "bash-1", Command: bgCmd, Status: executor.Completed})
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	third := reqs[2]
	llmCheckConversation(t, third)
	msgs := third.Messages
	if last := msgs[len(msgs)-1]; last.Role != "user" || last.Content != notice || msgs[len(msgs)-2].ToolCallID != "call_go" {
		t.Errorf("the notice should follow the release's result:\n%s", third)
	}
	if n := llmCount(reqs[3], notice); n != 1 {
		t.Errorf("the next turn's request carries the notice %d times:\n%s", n, reqs[3])
	}
}

// Provider failures end the turn cleanly with a message naming the cause
// (no JSON-RPC error), transient ones are retried, and the daemon goes on
// serving. The API key never reaches the editor, the log or the journal,
// even when the provider echoes it.
func TestE2EModelProviderErrors(t *testing.T) {
	tests := []struct {
		name     string
		script   []llmtest.Response // KEY in a body stands for the API key
		want     string             // in the turn's agent text
		requests int
	}{
		{"401 bad key", []llmtest.Response{llmtest.Error(401, "Authentication Fails, your api key: KEY is invalid")},
			"The model provider did not accept the API key (HTTP 401: it is wrong, revoked or missing). Set DSH_API_KEY (or DEEPSEEK_API_KEY)", 1},
		{"402 balance", []llmtest.Response{llmtest.Error(402, "Insufficient Balance")},
			"insufficient balance", 1},
		{"429 then success", []llmtest.Response{llmtest.Error(429, "Rate limit reached").With("Retry-After", "1"),
			llmtest.Reply("made it")}, "made it", 2},
		{"500 then success", []llmtest.Response{llmtest.Error(500, "internal error"), llmtest.Reply("made it")},
			"made it", 2},
		{"402 after a tool call", []llmtest.Response{llmtest.Calls(llmBash("call_t", "true", "Do nothing", false)),
			llmtest.Error(402, "Insufficient Balance")}, "insufficient balance", 2},
		{"dropped before any output, then success", []llmtest.Response{{Drop: true}, llmtest.Reply("made it")},
			"made it", 2},
		{"dropped after output", []llmtest.Response{{Chunks: []llmtest.Chunk{llmtest.Say("half ")}, Drop: true}},
			"The connection to the model provider failed.", 1},
		{"malformed SSE", []llmtest.Response{llmtest.Stream(llmtest.Say("partial "), llmtest.Raw("data: {oops\n\n"))},
			"could not be read", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t)
			f := newLLMFixture(t, srv, llmOptions{})
			for _, r := range tt.script {
				r.Body = strings.ReplaceAll(r.Body, "KEY", f.key)
				srv.Push(r)
			}
			srv.Push(llmtest.Reply("recovered"))
			start := time.Now()
			stop, us := f.turn("hi")
			t.Logf("turn took %v", time.Since(start))
			if stop != "end_turn" {
				t.Fatalf("stopReason %q", stop)
			}
			text := llmChunks(us, "agent_message_chunk")
			if !strings.Contains(text, tt.want) {
				t.Errorf("agent text %q lacks %q", text, tt.want)
			}
			// A retried success shows the answer, after one line per retry
			// that told the user it was retrying.
			if tt.want == "made it" {
				retries := strings.Count(text, "[model provider: retrying in ")
				if retries != tt.requests-1 || !strings.HasSuffix(text, "]\nmade it") {
					t.Errorf("a retried success shows %q", text)
				}
			}
			if n := len(srv.Requests()); n != tt.requests {
				t.Errorf("%d requests, want %d", n, tt.requests)
			}
			stop, us = f.turn("again")
			if got := llmChunks(us, "agent_message_chunk"); stop != "end_turn" || got != "recovered" {
				t.Errorf("next prompt: %q, %q", stop, got)
			}
			llmCheckConversation(t, srv.Last())
			f.assertKeyHidden()
		})
	}
}

// The API key does not reach the model's commands, even in a variable the
// user allowed through.
func TestE2EModelKeyNotInCommandEnvironment(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.Calls(llmBash("call_env", "env", "Show the environment", false)),
		llmtest.Reply("ok"),
	)
	key, visible := llmNewKey(), acptest.NewMarker()
	f := newLLMFixture(t, srv, llmOptions{
		key:  key,
		args: []string{"--allow-env", "E2E_COPY"},
		env:  []string{"E2E_VISIBLE=" + visible, "E2E_COPY=" + key},
	})
	f.mustTurn("show me", "end_turn")
	got := llmToolResult(t, srv.Last(), "call_env")
	if !strings.Contains(got, "E2E_VISIBLE="+visible) {
		t.Fatalf("env printed no E2E_VISIBLE: %q", got)
	}
	if strings.Contains(got, key) || strings.Contains(got, "E2E_COPY") {
		t.Errorf("the API key reached a command's environment:\n%s", got)
	}
	f.assertKeyHidden()
}

// A cancel while the model streams (here in the middle of a tool call)
// answers the prompt "cancelled" at once; the next turn's request keeps the
// partial text and no half-made call.
func TestE2EModelCancelWhileStreaming(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.Response{Chunks: []llmtest.Chunk{llmtest.Say("Let me look. "),
			llmtest.StartCall(0, "call_p", "bash", `{"command":"ec`)}, Stall: true},
		llmtest.Reply("Fresh start."),
	)
	f := newLLMFixture(t, srv, llmOptions{})
	reply := f.startTurn("look around")
	f.waitKind("agent_message_chunk")
	if got := f.cancelAndWait(reply); got != "cancelled" {
		t.Fatalf("stopReason %q", got)
	}
	if n := f.count(f.sid, "tool_call", ""); n != 0 {
		t.Errorf("%d cards opened for a call that never finished streaming", n)
	}

	us := f.mustTurn("try again", "end_turn")
	llmNoUpdatesAfterCancel(t, f, "agent_message_chunk", "usage_update")
	if got := llmChunks(us, "agent_message_chunk"); got != "Fresh start." {
		t.Errorf("next answer %q", got)
	}
	req := srv.Last()
	llmCheckConversation(t, req)
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

// A cancel while the client waits to retry a rate-limited request answers
// the prompt at once, without waiting out the Retry-After.
func TestE2EModelCancelDuringRetryWait(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.Error(429, "Rate limit reached").With("Retry-After", "30"),
		llmtest.Reply("Fresh start."),
	)
	f := newLLMFixture(t, srv, llmOptions{})
	arrived := srv.Arrived()
	reply := f.startTurn("hi")
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("no model request")
	}
	if got := f.cancelAndWait(reply); got != "cancelled" {
		t.Fatalf("stopReason %q", got)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests before the cancel, want 1", n)
	}
	us := f.mustTurn("again", "end_turn")
	if got := llmChunks(us, "agent_message_chunk"); got != "Fresh start." {
		t.Errorf("next answer %q", got)
	}
	llmCheckConversation(t, srv.Last())
}

// A cancel while the model's command runs kills its process group, fails the
// card, closes the message's remaining call unrun, ends the turn
// "cancelled", and the model later reads cancelled results for both calls.
func TestE2EModelCancelWhileToolRuns(t *testing.T) {
	marker := acptest.NewMarker()
	cmd := "export M=" + marker + "; sleep 600 & sleep 600"
	srv := llmtest.New(t,
		llmtest.Calls(llmBash("call_s", cmd, "Wait a long time", false),
			llmBash("call_n", "touch never", "Must not run", false)),
		llmtest.Reply("Understood."),
	)
	f := newLLMFixture(t, srv, llmOptions{})
	reply := f.startTurn("wait")
	f.waitKind("tool_call")
	waitMarkedProcs(t, marker, 2)
	if got := f.cancelAndWait(reply); got != "cancelled" {
		t.Fatalf("stopReason %q", got)
	}
	if left, err := acptest.WaitNoProcsWithMarker(ctxT(t), marker); err != nil {
		t.Fatalf("survivors %+v: %v", left, err)
	}
	seq := llmCardSequence(t, decodeUpdates(t, f.Updates(f.sid)))
	if len(seq) != 2 {
		t.Fatalf("%d cards, want 2", len(seq))
	}
	if c := seq[0]; c.open.Title != cmd || c.final == nil || c.final.Status != "failed" || c.final.Meta.Exit == nil {
		t.Errorf("running call's card: open %+v final %+v", c.open, c.final)
	}
	if c := seq[1]; c.open.Title != "touch never" || c.final == nil || c.final.Status != "failed" {
		t.Errorf("unrun call's card: open %+v final %+v", c.open, c.final)
	}
	if _, err := os.Stat(filepath.Join(f.cwd, "never")); err == nil {
		t.Error("the call after the cancelled one ran")
	}

	f.mustTurn("what happened?", "end_turn")
	llmNoUpdatesAfterCancel(t, f, "agent_message_chunk", "usage_update")
	req := srv.Last()
	llmCheckConversation(t, req)
	got := llmToolResult(t, req, "call_s")
	if !strings.HasSuffix(got, "[cancelled: the user stopped the turn while this call ran]") {
		t.Errorf("the cancelled call's result reads %q", got)
	}
	t.Logf("cancelled result: %q", got)
	if got := llmToolResult(t, req, "call_n"); got != "cancelled: the user stopped the turn before this call ran" {
		t.Errorf("the unrun call's result reads %q", got)
	}
}

// llmNoUpdatesAfterCancel fails if, after the reply "cancelled", the session
// got an update of a kind the following turn does not produce (allowed):
// every update of a turn must precede its reply.
func llmNoUpdatesAfterCancel(t *testing.T, f *llmFixture, allowed ...string) {
	t.Helper()
	replied := false
	for _, m := range f.Inbound() {
		var msg struct {
			Method string `json:"method"`
			Result struct {
				StopReason string `json:"stopReason"`
			} `json:"result"`
			Params struct {
				SessionID string          `json:"sessionId"`
				Update    json.RawMessage `json:"update"`
			} `json:"params"`
		}
		if json.Unmarshal(m, &msg) != nil {
			continue
		}
		switch {
		case msg.Result.StopReason == "cancelled":
			replied = true
		case replied && msg.Method == "session/update" && msg.Params.SessionID == f.sid &&
			!slices.Contains(allowed, acptest.UpdateKind(msg.Params.Update)):
			t.Errorf("an update after the turn's cancelled reply: %s", m)
		}
	}
	if !replied {
		t.Error("no reply \"cancelled\" seen")
	}
}

// Closing stdin ends the daemon promptly with status 0 whatever is running —
// a background task, a foreground command, a model stream — and no process
// it started survives.
func TestE2EModelStdinEOF(t *testing.T) {
	tests := []struct {
		name   string
		script func(marker string) []llmtest.Response
		procs  int    // processes with the marker to wait for; 0: none
		wait   string // the update kind showing the turn is under way
	}{
		{"background task", func(m string) []llmtest.Response {
			return []llmtest.Response{
				llmtest.Calls(llmBash("call_bg", "export M="+m+"; sleep 600 & sleep 600", "Sleep in the background", true)),
				llmtest.Reply("Started."),
			}
		}, 2, ""},
		{"foreground command", func(m string) []llmtest.Response {
			return []llmtest.Response{llmtest.Calls(llmBash("call_fg", "export M="+m+"; sleep 600 & sleep 600", "Sleep", false))}
		}, 2, "tool_call"},
		{"model stream", func(string) []llmtest.Response {
			return []llmtest.Response{{Chunks: []llmtest.Chunk{llmtest.Say("Hmm")}, Stall: true}}
		}, 0, "agent_message_chunk"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			marker := acptest.NewMarker()
			srv := llmtest.New(t, tt.script(marker)...)
			f := newLLMFixture(t, srv, llmOptions{})
			var reply <-chan string
			if tt.wait == "" {
				f.mustTurn("start it", "end_turn")
			} else {
				reply = f.startTurn("start it")
				f.waitKind(tt.wait)
			}
			if tt.procs > 0 {
				waitMarkedProcs(t, marker, tt.procs)
			}
			start := time.Now()
			if err := f.CloseStdin(); err != nil {
				t.Fatal(err)
			}
			err := f.Wait(ctxT(t))
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
			if reply != nil {
				// The turn in flight is answered before the daemon goes, or
				// the connection ends unanswered; either way it returns.
				select {
				case got := <-reply:
					t.Logf("prompt in flight: %q", got)
				case <-time.After(5 * time.Second):
					t.Error("the prompt in flight never returned")
				}
			}
		})
	}
}

// --max-turn-requests bounds a turn whose model keeps calling tools; the
// conversation stays valid for the next turn.
func TestE2EModelMaxTurnRequests(t *testing.T) {
	call := func(id string) llmtest.Response { return llmtest.Calls(llmBash(id, "true", "Do nothing", false)) }
	srv := llmtest.New(t, call("call_1"), call("call_2"), call("call_3"))
	f := newLLMFixture(t, srv, llmOptions{args: []string{"--max-turn-requests", "2"}})
	us := f.mustTurn("loop forever", "max_turn_requests")
	if n := len(srv.Requests()); n != 2 || srv.Remaining() != 1 {
		t.Errorf("%d requests (%d responses left), want 2", n, srv.Remaining())
	}
	if seq := llmCardSequence(t, us); len(seq) != 2 {
		t.Errorf("%d cards, want 2", len(seq))
	}
	srv.Push(llmtest.Reply("Stopped."))
	f.mustTurn("go on", "end_turn")
	req := srv.Last()
	llmCheckConversation(t, req)
	if got := llmToolResult(t, req, "call_2"); got != "(no output)" {
		t.Errorf("the last call's result %q", got)
	}
}

// A call to an unknown tool, with arguments that are not a JSON object or
// lack a required field, or naming an unknown task, is answered with an error result the model reads
// in its next request; the turn goes on.
func TestE2EModelMalformedToolCalls(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.Calls(
			llmtest.Call{ID: "call_u", Name: "read_file", Args: `{"path":"x"}`},
			llmtest.Call{ID: "call_j", Name: "bash", Args: `{"command": "ls"`},
			llmtest.Call{ID: "call_m", Name: "bash", Args: `{"description":"List files"}`},
			llmtest.Call{ID: "call_r", Name: "bash_output", Args: `{"task_id":"bash-9"}`},
			llmtest.Call{ID: "call_k", Name: "bash_kill", Args: `{"task":"bash-1"}`},
		),
		llmtest.Reply("I will do better."),
	)
	f := newLLMFixture(t, srv, llmOptions{})
	us := f.mustTurn("go", "end_turn")
	if got := llmChunks(us, "agent_message_chunk"); got != "I will do better." {
		t.Errorf("agent text %q", got)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	req := reqs[1]
	llmCheckConversation(t, req)
	wants := map[string]string{
		"call_u": `unknown tool "read_file"; the tools you can call are: bash, bash_output, bash_kill, todo_write`,
		"call_j": "the arguments of this bash call are not a JSON object: {\"command\": \"ls\"\n" +
			"Call the tool again with a JSON object that matches its schema.",
		"call_m": `invalid arguments: missing required field "command"`,
		"call_r": "unknown task bash-9",
		"call_k": `invalid arguments: missing required field "task_id"`,
	}
	for id, want := range wants {
		if got := llmToolResult(t, req, id); got != want {
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
	seq := llmCardSequence(t, us)
	if len(seq) != 5 {
		t.Fatalf("%d cards, want 5", len(seq))
	}
	for i, title := range []string{"read_file", "bash", "bash", "Read output from background task bash-9", "Kill background task"} {
		c := seq[i]
		if c.open.Title != title || c.open.Meta.Info != nil || c.final == nil || c.final.Status != "failed" {
			t.Errorf("card %d: open %+v final %+v", i, c.open, c.final)
		}
	}
}
