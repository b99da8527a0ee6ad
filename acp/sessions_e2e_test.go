package acp_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

// These tests drive the real binary against the fake model for what keeps
// a session alive and honest over its length: usage updates, compaction
// (live, visible, and replayed into the same next request), slash
// commands, the model option, project instructions and prompt content the
// model cannot read.

// sessModel answers like a model working through turns: each user prompt
// gets a bash call printing lines, each result an "ok", and a compaction's
// summary request a short summary.
type sessModel struct {
	lines     int // lines the command prints
	calls     atomic.Int64
	summaries atomic.Int64
}

func isSummary(r llmtest.Request) bool {
	return len(r.Messages) > 0 && strings.HasPrefix(r.Messages[0].Content, "You compact the history")
}

func (m *sessModel) respond(r llmtest.Request) llmtest.Response {
	if isSummary(r) {
		n := m.summaries.Add(1)
		return llmtest.Reply(fmt.Sprintf("Summary %d: the user asked for numbered output many times; each command printed it and exited 0.", n))
	}
	if r.Messages[len(r.Messages)-1].Role == "tool" {
		return llmtest.Reply("ok")
	}
	id := fmt.Sprintf("call_%d", m.calls.Add(1))
	cmd := fmt.Sprintf("for i in $(seq 1 %d); do echo \"%s output line $i of a long listing\"; done", m.lines, id)
	return llmtest.Calls(llmBash(id, cmd, "Print a listing", false))
}

// sessUsage is a usage_update.
type sessUsage struct{ Used, Size int }

// sessionUpdates decodes the updates of sid in order, as kind and payload.
func sessionUpdates(t *testing.T, raw []json.RawMessage) (kinds []string, texts []string, usage []*sessUsage) {
	t.Helper()
	for _, u := range raw {
		var v struct {
			Kind    string          `json:"sessionUpdate"`
			Used    *int            `json:"used"`
			Size    int             `json:"size"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(u, &v); err != nil {
			t.Fatalf("bad update %s: %v", u, err)
		}
		var chunk struct {
			Text string `json:"text"`
		}
		if strings.HasSuffix(v.Kind, "_chunk") {
			_ = json.Unmarshal(v.Content, &chunk)
		}
		kinds = append(kinds, v.Kind)
		texts = append(texts, chunk.Text)
		var us *sessUsage
		if v.Kind == "usage_update" && v.Used != nil {
			us = &sessUsage{Used: *v.Used, Size: v.Size}
		}
		usage = append(usage, us)
	}
	return kinds, texts, usage
}

// A long session against a model that enforces a small window: 300 turns
// of commands with long outputs never fail; compactions happen and are
// shown; a usage_update follows every model response, grows between
// compactions and never passes the window; and a reload after the
// compactions sends the very request the live session sends.
func TestE2ESessionOutlivesItsWindow(t *testing.T) {
	const (
		window = 12_000
		turns  = 300
	)
	m := &sessModel{lines: 30}
	srv := llmtest.New(t)
	srv.SetContextWindow(window, llmtest.DeepSeekWording)
	srv.Respond(m.respond)
	args := []string{"--context-window", fmt.Sprint(window), "--mode", "auto"}
	cwd := t.TempDir()
	f := newLLMFixture(t, srv, llmOptions{args: args, cwd: cwd})
	start := time.Now()
	for i := 1; i <= turns; i++ {
		if stop, us := f.turn(fmt.Sprintf("turn %d: print the listing", i)); stop != "end_turn" {
			t.Fatalf("turn %d ended %s: %+v", i, stop, us)
		}
	}
	t.Logf("%d turns in %v; %d model requests, %d summaries", turns, time.Since(start), len(srv.Requests()), m.summaries.Load())

	reqs := srv.Requests()
	answered := 0
	for i, r := range reqs {
		switch {
		case r.OverWindow:
			t.Errorf("request %d (%d tokens) passed the window", i, r.PromptTokens)
		case !isSummary(r):
			answered++
		}
	}
	kinds, texts, usage := sessionUpdates(t, f.Updates(f.sid))
	compactions, usages := 0, 0
	last := 0
	for i, k := range kinds {
		switch {
		case k == "agent_message_chunk" && strings.Contains(texts[i], "[context compacted"):
			compactions++
			last = 0 // the context shrank: a new run of growth starts
		case k == "usage_update":
			usages++
			u := usage[i]
			if u == nil || u.Size != window || u.Used > u.Size || u.Used <= 0 {
				t.Fatalf("update %d: usage %+v (window %d)", i, u, window)
			}
			if u.Used < last {
				t.Errorf("update %d: usage fell from %d to %d without a compaction", i, last, u.Used)
			}
			last = u.Used
		case k == "agent_message_chunk" && strings.Contains(texts[i], "Details:"):
			t.Errorf("the user saw an error: %s", texts[i])
		}
	}
	if compactions == 0 || m.summaries.Load() == 0 {
		t.Fatalf("%d compactions shown, %d summaries", compactions, m.summaries.Load())
	}
	if usages != answered {
		t.Errorf("%d usage updates for %d model responses", usages, answered)
	}

	// Reload a copy of the journal in a second daemon: its next requests
	// are the live session's, byte for byte, through compactions too.
	state2 := t.TempDir()
	copyJournal(t, f.stateDir, state2, f.sid)
	// The second model answers from where the first one was.
	m2 := &sessModel{lines: 30}
	m2.calls.Store(m.calls.Load())
	m2.summaries.Store(m.summaries.Load())
	const more = 30
	for i := 1; i <= more; i++ {
		f.mustTurn(fmt.Sprintf("more %d", i), "end_turn")
	}
	live := srv.Requests()[len(reqs):]
	if m.summaries.Load() == m2.summaries.Load() {
		t.Errorf("no compaction summary in the %d turns after the copy; the comparison covers none", more)
	}

	srv2 := llmtest.New(t)
	srv2.SetContextWindow(window, llmtest.DeepSeekWording)
	srv2.Respond(m2.respond)
	env := []string{"DSH_BASE_URL=" + srv2.URL(), "DSH_API_KEY=" + f.key, "DSH_MODEL=" + llmModelName}
	d2 := startDaemonIn(t, state2, acptest.ZedCapabilities(), args, env...)
	t.Cleanup(func() { llmCheckExit(t, d2) })
	if _, err := d2.loadSession(f.sid, cwd); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= more; i++ {
		if stop := d2.prompt(f.sid, fmt.Sprintf("more %d", i)); stop != "end_turn" {
			t.Fatalf("reloaded turn %d: %s", i, stop)
		}
	}
	again := srv2.Requests()
	if len(again) != len(live) {
		t.Fatalf("the reloaded session made %d requests, the live one %d", len(again), len(live))
	}
	for i := range live {
		if string(live[i].Raw) != string(again[i].Raw) {
			t.Fatalf("request %d after the reload differs:\nlive:\n%s\nreloaded:\n%s", i, live[i], again[i])
		}
	}
}

// copyJournal copies session sid's journal from one state directory to
// another (the live daemon keeps writing its own).
func copyJournal(t *testing.T, from, to, sid string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(from, "sessions", sid+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(to, "sessions"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(to, "sessions", sid+".jsonl"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// wireIndex is the position in msgs of the first message pred accepts, -1
// when none does.
func wireIndex(msgs []json.RawMessage, pred func(json.RawMessage) bool) int {
	return slices.IndexFunc(msgs, pred)
}

func isReplyWith(field string) func(json.RawMessage) bool {
	return func(m json.RawMessage) bool {
		var v map[string]json.RawMessage
		if json.Unmarshal(m, &v) != nil {
			return false
		}
		_, isMethod := v["method"]
		var res map[string]json.RawMessage
		_ = json.Unmarshal(v["result"], &res)
		_, has := res[field]
		return !isMethod && has
	}
}

func isUpdateOf(kind string) func(json.RawMessage) bool {
	return func(m json.RawMessage) bool {
		var v struct {
			Method string `json:"method"`
			Params struct {
				Update json.RawMessage `json:"update"`
			} `json:"params"`
		}
		return json.Unmarshal(m, &v) == nil && v.Method == "session/update" && acptest.UpdateKind(v.Params.Update) == kind
	}
}

// The slash commands are advertised right after the session/new reply (Zed
// drops a thread's updates before it) and after the session/load reply;
// each is answered by the daemon, journaled, replayed on load, and never
// reaches the model.
func TestE2ESlashCommands(t *testing.T) {
	m := &sessModel{lines: 60}
	srv := llmtest.New(t)
	srv.SetModels(llmModelName, "e2e-big")
	srv.Respond(m.respond)
	cwd := t.TempDir()
	f := newLLMFixture(t, srv, llmOptions{cwd: cwd, args: []string{"--context-window", "e2e-model=100000,e2e-big=400k"}})

	in := f.Inbound()
	reply, cmds := wireIndex(in, isReplyWith("sessionId")), wireIndex(in, isUpdateOf("available_commands_update"))
	if reply < 0 || cmds < reply {
		t.Fatalf("available_commands_update at %d, the session/new reply at %d: it must follow the reply", cmds, reply)
	}
	u, _ := f.WaitUpdate(ctxT(t), f.sid, func(u json.RawMessage) bool { return acptest.UpdateKind(u) == "available_commands_update" })
	var adv struct {
		Commands []struct {
			Name  string `json:"name"`
			Input *struct {
				Hint string `json:"hint"`
			} `json:"input"`
		} `json:"availableCommands"`
	}
	_ = json.Unmarshal(u, &adv)
	var names []string
	for _, c := range adv.Commands {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "compact,model,thinking,mode,sandbox,allow-project,usage,undo,help" || adv.Commands[1].Input == nil {
		t.Errorf("advertised commands %s", u)
	}

	for i := 1; i <= 3; i++ {
		f.mustTurn(fmt.Sprintf("turn %d", i), "end_turn")
	}
	before := len(srv.Requests())
	command := func(text string) string {
		t.Helper()
		us := f.mustTurn(text, "end_turn")
		return llmChunks(us, "agent_message_chunk")
	}
	if got := command("/help"); !strings.Contains(got, "/compact") || !strings.Contains(got, "/model [model id]") || !strings.Contains(got, "starts with !") {
		t.Errorf("/help: %q", got)
	}
	if got := command("/usage"); !strings.Contains(got, "of 100,000 tokens") || !strings.Contains(got, "Model: e2e-model.") ||
		!strings.Contains(got, "6 model responses") {
		t.Errorf("/usage: %q", got)
	}
	if got := command("/mode"); !strings.Contains(got, "Permission mode: ask.") {
		t.Errorf("/mode: %q", got)
	}
	if got := command("/mode auto"); !strings.Contains(got, "Permission mode: auto") || f.count(f.sid, "current_mode_update", `"auto"`) != 1 {
		t.Errorf("/mode auto: %q", got)
	}
	if got := command("/mode sideways"); !strings.Contains(got, `unknown mode "sideways"`) {
		t.Errorf("/mode sideways: %q", got)
	}
	level := autoLevel(t)
	if got := command("/sandbox"); !strings.Contains(got, "Sandbox: "+string(level)+" — ") || !strings.Contains(got, "* "+string(level)+" — ") {
		t.Errorf("/sandbox: %q", got)
	}
	if got := command("/sandbox sideways"); !strings.Contains(got, `unknown sandbox level "sideways"`) {
		t.Errorf("/sandbox sideways: %q", got)
	}
	if got := command("/sandbox off"); !strings.Contains(got, "Sandbox: off — No sandbox") || f.count(f.sid, "config_option_update", `"currentValue":"off"`) != 1 {
		t.Errorf("/sandbox off: %q", got)
	}
	if got := command("/model"); !strings.Contains(got, "* e2e-model") || !strings.Contains(got, "  e2e-big") {
		t.Errorf("/model: %q", got)
	}
	if got := command("/model e2e-big"); !strings.Contains(got, "Model: e2e-big (context window 400,000 tokens)") {
		t.Errorf("/model e2e-big: %q", got)
	}
	if got := command("/model gpt-9"); !strings.Contains(got, `unknown model "gpt-9"`) {
		t.Errorf("/model gpt-9: %q", got)
	}
	if got := command("/compact"); !strings.Contains(got, "[context compacted: ") || !strings.Contains(got, "summarized 1 older turn") ||
		!strings.Contains(got, "of 400,000 tokens") {
		t.Errorf("/compact: %q", got)
	}
	reqs := srv.Requests()
	if n := len(reqs) - before; n != 1 || !isSummary(reqs[before]) {
		t.Errorf("the commands made %d model requests; want only /compact's summary", n)
	}
	f.mustTurn("and now?", "end_turn")
	next := srv.Requests()[len(reqs)]
	if next.Model != "e2e-big" || strings.Contains(next.String(), "/help") || strings.Contains(next.String(), "/usage") {
		t.Errorf("the request after the commands:\nmodel %s\n%s", next.Model, next)
	}
	if !strings.Contains(next.Messages[1].Content, "[Summary of the 1 earlier turns") {
		t.Errorf("the request after /compact starts with %q", next.Messages[1].Content)
	}

	// A reload draws the commands as the user typed them, with their
	// answers, and advertises the commands again after its reply.
	f2 := reloadInNewDaemon(t, f, srv, cwd)
	raw, err := f2.loadSession(f.sid, cwd)
	if err != nil {
		t.Fatal(err)
	}
	prompts := replayedPrompts(decodeUpdates(t, raw))
	for _, want := range []string{"/help", "/usage", "/mode auto", "/model e2e-big", "/compact"} {
		if !slices.Contains(prompts, want) {
			t.Errorf("the reload does not show %q among %q", want, prompts)
		}
	}
	if !strings.Contains(rawText(raw), "[context compacted: ") || !strings.Contains(rawText(raw), "Permission mode: auto") {
		t.Error("the reload lost the commands' answers")
	}
	for _, u := range raw {
		if acptest.UpdateKind(u) == "available_commands_update" {
			t.Error("available_commands_update came before the session/load reply")
		}
	}
	if _, err := f2.WaitUpdate(ctxT(t), f.sid, func(u json.RawMessage) bool { return acptest.UpdateKind(u) == "available_commands_update" }); err != nil {
		t.Errorf("no available_commands_update after session/load: %v", err)
	}
}

// reloadInNewDaemon stops f's daemon and starts another on its state
// directory, talking to srv.
func reloadInNewDaemon(t *testing.T, f *llmFixture, srv *llmtest.Server, cwd string, args ...string) *daemon {
	t.Helper()
	llmCheckExit(t, f.daemon)
	env := []string{"DSH_BASE_URL=" + srv.URL(), "DSH_API_KEY=" + f.key, "DSH_MODEL=" + llmModelName}
	d := startDaemonIn(t, f.stateDir, acptest.ZedCapabilities(), args, env...)
	t.Cleanup(func() { llmCheckExit(t, d) })
	return d
}

type configOption struct {
	ID           string `json:"id"`
	Category     string `json:"category"`
	CurrentValue string `json:"currentValue"`
	Options      []struct {
		Value string `json:"value"`
	} `json:"options"`
}

func optionByID(opts []configOption, id string) *configOption {
	for i := range opts {
		if opts[i].ID == id {
			return &opts[i]
		}
	}
	return nil
}

// The model config option lists the provider's models, switches the model
// of the next request, and survives a reload (the load reply shows it).
func TestE2EModelOption(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetModels("e2e-small", "e2e-big") // the configured e2e-model is not listed
	srv.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Reply("ok") })
	cwd := t.TempDir()
	f := newLLMFixture(t, srv, llmOptions{cwd: cwd})
	var opened struct {
		SessionID     string         `json:"sessionId"`
		ConfigOptions []configOption `json:"configOptions"`
	}
	if err := f.Call(ctxT(t), "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}, &opened); err != nil {
		t.Fatal(err)
	}
	model := optionByID(opened.ConfigOptions, "model")
	var values []string
	if model != nil {
		for _, o := range model.Options {
			values = append(values, o.Value)
		}
	}
	if model == nil || model.Category != "model" || model.CurrentValue != llmModelName || strings.Join(values, ",") != "e2e-model,e2e-small,e2e-big" {
		t.Fatalf("model option %+v (values %v)", model, values)
	}
	if n := srv.ModelsRequests(); n != 1 {
		t.Errorf("%d models requests for two sessions; the list is fetched once", n)
	}

	f.mustTurn("first", "end_turn")
	var set struct {
		ConfigOptions []configOption `json:"configOptions"`
	}
	if err := f.Call(ctxT(t), "session/set_config_option", map[string]any{"sessionId": f.sid, "configId": "model", "value": "e2e-big"}, &set); err != nil {
		t.Fatal(err)
	}
	if o := optionByID(set.ConfigOptions, "model"); o == nil || o.CurrentValue != "e2e-big" {
		t.Errorf("set_config_option answered %+v", set.ConfigOptions)
	}
	if f.count(f.sid, "config_option_update", `"currentValue":"e2e-big"`) != 1 {
		t.Error("the switch was not announced with config_option_update")
	}
	f.mustTurn("second", "end_turn")
	if got := srv.Last().Model; got != "e2e-big" {
		t.Errorf("request model after the switch: %q", got)
	}
	err := f.Call(ctxT(t), "session/set_config_option", map[string]any{"sessionId": f.sid, "configId": "model", "value": "nope"}, nil)
	if rpcCode(err) != -32602 || !strings.Contains(rpcErrorText(err), "e2e-small") {
		t.Errorf("unknown model: %v", err)
	}
	// session/set_model is the same switch.
	if err := f.Call(ctxT(t), "session/set_model", map[string]any{"sessionId": opened.SessionID, "modelId": "e2e-small"}, nil); err != nil {
		t.Errorf("session/set_model: %v", err)
	}

	d2 := reloadInNewDaemon(t, f, srv, cwd)
	var loaded struct {
		ConfigOptions []configOption `json:"configOptions"`
	}
	if err := d2.Call(ctxT(t), "session/load", map[string]any{"sessionId": f.sid, "cwd": cwd, "mcpServers": []any{}}, &loaded); err != nil {
		t.Fatal(err)
	}
	if o := optionByID(loaded.ConfigOptions, "model"); o == nil || o.CurrentValue != "e2e-big" {
		t.Errorf("the load reply's model option: %+v", o)
	}
	if stop := d2.prompt(f.sid, "third"); stop != "end_turn" {
		t.Fatal(stop)
	}
	if got := srv.Last().Model; got != "e2e-big" {
		t.Errorf("request model after the reload: %q", got)
	}
}

// AGENTS.md, the repository root's and the cwd's, reaches the system
// prompt; the user sees it is used; an edit applies from the next turn.
func TestE2EProjectInstructions(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	cwd := filepath.Join(root, "app")
	if err := os.Mkdir(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "AGENTS.md"), "ROOT-RULE: run make check before you finish.\n")
	write(filepath.Join(cwd, "AGENTS.md"), "APP-RULE-1: keep app/ free of cgo.\n")
	srv := llmtest.New(t)
	srv.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Reply("ok") })
	f := newLLMFixture(t, srv, llmOptions{cwd: cwd})

	us := f.mustTurn("hello", "end_turn")
	sys := srv.Last().Messages[0].Content
	if i, j := strings.Index(sys, "ROOT-RULE"), strings.Index(sys, "APP-RULE-1"); i < 0 || j < i {
		t.Fatalf("system prompt lacks the instructions, in order:\n%s", sys)
	}
	if got := llmChunks(us, "agent_thought_chunk"); !strings.Contains(got, filepath.Join(cwd, "AGENTS.md")) {
		t.Errorf("the user was not shown the instructions in use: %q", got)
	}
	us = f.mustTurn("again", "end_turn")
	if got := llmChunks(us, "agent_thought_chunk"); got != "" {
		t.Errorf("unchanged instructions shown again: %q", got)
	}
	write(filepath.Join(cwd, "AGENTS.md"), "APP-RULE-2: cgo is fine now.\n")
	f.mustTurn("and now", "end_turn")
	if sys := srv.Last().Messages[0].Content; !strings.Contains(sys, "APP-RULE-2") || strings.Contains(sys, "APP-RULE-1") {
		t.Errorf("the edit was not picked up:\n%s", sys)
	}
}

// promptCapabilities advertise only what is handled; an image the client
// sends anyway is named to the model and told to the user, not dropped.
func TestE2EPromptContentHonesty(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply("I cannot see it."))
	bin := acptest.BuildBinary(t)
	a := acptest.Start(t, bin, nil, []string{"DSH_STATE_DIR=" + t.TempDir(), "DSH_BASE_URL=" + srv.URL(),
		"DSH_API_KEY=" + llmNewKey(), "DSH_MODEL=" + llmModelName})
	var init struct {
		AgentCapabilities struct {
			PromptCapabilities map[string]any `json:"promptCapabilities"`
		} `json:"agentCapabilities"`
	}
	if err := a.Call(ctxT(t), "initialize", acptest.InitializeParams(acptest.ZedCapabilities()), &init); err != nil {
		t.Fatal(err)
	}
	if pc := init.AgentCapabilities.PromptCapabilities; pc["image"] == true || pc["audio"] == true || pc["embeddedContext"] != true {
		t.Errorf("promptCapabilities %v", pc)
	}
	d := &daemon{Agent: a, t: t}
	sid := d.newSession(t.TempDir())
	prompt := []any{
		map[string]any{"type": "text", "text": "what is this? "},
		map[string]any{"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
	}
	var r struct {
		StopReason string `json:"stopReason"`
	}
	if err := a.Call(ctxT(t), "session/prompt", map[string]any{"sessionId": sid, "prompt": prompt}, &r); err != nil || r.StopReason != "end_turn" {
		t.Fatalf("prompt: %v %s", err, r.StopReason)
	}
	us := decodeUpdates(t, a.Updates(sid))
	if got := llmChunks(us, "agent_message_chunk"); !strings.Contains(got, "Not sent to the model") || !strings.Contains(got, "image") {
		t.Errorf("the user was not told: %q", got)
	}
	if got := srv.Last().Messages[1].Content; got != "what is this? [image content omitted: this agent reads text only]" {
		t.Errorf("the model read %q", got)
	}
}

// A provider without a models endpoint offers the configured model only,
// and any model id can still be chosen by name (the provider judges it).
func TestE2EModelWithoutAList(t *testing.T) {
	srv := llmtest.New(t)
	srv.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Reply("ok") })
	f := newLLMFixture(t, srv, llmOptions{})
	us := f.mustTurn("/model", "end_turn")
	if got := llmChunks(us, "agent_message_chunk"); !strings.Contains(got, "* "+llmModelName+"\n") || strings.Count(got, "\n  ") != 0 {
		t.Errorf("/model: %q", got)
	}
	us = f.mustTurn("/model my-local-model", "end_turn")
	if got := llmChunks(us, "agent_message_chunk"); !strings.Contains(got, "Model: my-local-model") {
		t.Errorf("/model my-local-model: %q", got)
	}
	f.mustTurn("hi", "end_turn")
	if got := srv.Last().Model; got != "my-local-model" {
		t.Errorf("request model %q", got)
	}
	us = f.mustTurn("/model two words", "end_turn")
	if got := llmChunks(us, "agent_message_chunk"); !strings.Contains(got, "unknown model") {
		t.Errorf("/model two words: %q", got)
	}
}
