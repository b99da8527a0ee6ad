package acp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

// permDaemon is a daemon with a scripted model and a recording responder.
type permDaemon struct {
	*daemon
	model *llmtest.Server
	sid   string
	cwd   string

	mu    sync.Mutex
	asked []json.RawMessage // session/request_permission params, in order
	count int               // questions asked, counted by every responder set
	// answer answers the questions; SetResponder replaces it.
	answer acptest.Responder
}

// SetResponder changes how the questions are answered; they are still
// recorded and counted.
func (p *permDaemon) SetResponder(r acptest.Responder) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.answer = r
}

func startPermDaemon(t *testing.T, answer string, env ...string) *permDaemon {
	t.Helper()
	return startPermDaemonIn(t, answer, t.TempDir(), env...)
}

// startPermDaemonIn is startPermDaemon with the session in cwd.
func startPermDaemonIn(t *testing.T, answer, cwd string, env ...string) *permDaemon {
	t.Helper()
	model := llmtest.New(t)
	cfgHome := t.TempDir() // no user rules
	env = append([]string{"DSH_BASE_URL=" + model.URL(), "DSH_API_KEY=test-key", "XDG_CONFIG_HOME=" + cfgHome}, env...)
	d := startDaemon(t, acptest.ZedCapabilities(), nil, env...)
	p := &permDaemon{daemon: d, model: model, cwd: cwd}
	p.answer = acptest.PermissionResponder(answer)
	d.SetResponder(func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		if method == "session/request_permission" {
			p.mu.Lock()
			p.asked = append(p.asked, params)
			p.count++
			p.mu.Unlock()
		}
		p.mu.Lock()
		answer := p.answer
		p.mu.Unlock()
		return answer(ctx, method, params)
	})
	p.sid = d.newSession(p.cwd)
	return p
}

// questionCount counts the questions asked, whatever responder answered.
func (p *permDaemon) questionCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.count
}

func (p *permDaemon) questions() []json.RawMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]json.RawMessage(nil), p.asked...)
}

// runBash scripts one model turn that calls bash with command, then ends.
func (p *permDaemon) runBash(callID, command string) string {
	p.model.Push(
		llmtest.Calls(llmtest.Call{ID: callID, Name: "bash", Args: fmt.Sprintf(`{"command":%q,"description":"Do the thing"}`, command)}),
		llmtest.Reply("done"),
	)
	return p.prompt(p.sid, "please run it")
}

// toolResult is the text the model received for callID.
func (p *permDaemon) toolResult(t *testing.T, callID string) string {
	t.Helper()
	for _, r := range p.model.Requests() {
		for _, m := range r.Messages {
			if m.Role == "tool" && m.ToolCallID == callID {
				return m.Content
			}
		}
	}
	t.Fatalf("the model never received a result for %s", callID)
	return ""
}

func (p *permDaemon) card(t *testing.T, callID string) *card {
	t.Helper()
	c := cards(decodeUpdates(t, p.Updates(p.sid)))[callID]
	if c == nil {
		t.Fatalf("no card %s", callID)
	}
	return c
}

func TestPermissionAskAllowOnce(t *testing.T) {
	p := startPermDaemon(t, "allow_once")
	if got := p.runBash("call_1", "touch made-by-model"); got != "end_turn" {
		t.Fatalf("stopReason %q", got)
	}
	qs := p.questions()
	if len(qs) != 1 {
		t.Fatalf("%d permission questions, want 1", len(qs))
	}
	var q struct {
		ToolCall struct {
			ToolCallID string          `json:"toolCallId"`
			Title      string          `json:"title"`
			Kind       string          `json:"kind"`
			Status     string          `json:"status"`
			RawInput   json.RawMessage `json:"rawInput"`
			Content    json.RawMessage `json:"content"`
		} `json:"toolCall"`
		Options []struct{ OptionID, Kind string } `json:"options"`
	}
	if err := json.Unmarshal(qs[0], &q); err != nil {
		t.Fatal(err)
	}
	tc := q.ToolCall
	if tc.ToolCallID != "call_1" || tc.Title != "touch made-by-model" || tc.Kind != "execute" || tc.Status != "pending" ||
		!strings.Contains(string(tc.RawInput), "touch made-by-model") || !strings.Contains(string(tc.Content), "Do the thing") {
		t.Errorf("the question does not show what is approved: %s", qs[0])
	}
	if _, err := os.Stat(filepath.Join(p.cwd, "made-by-model")); err != nil {
		t.Errorf("allowed command did not run: %v", err)
	}
	// The card opens pending (no spinner, no Stop button for a command
	// that has not run), stays so until the answer, then runs.
	c := p.card(t, "call_1")
	statuses := []string{c.open.Status}
	for _, u := range c.updates {
		if u.Status != "" {
			statuses = append(statuses, u.Status)
		}
	}
	if strings.Join(statuses, ",") != "pending,in_progress,completed" {
		t.Errorf("card statuses %v, want pending,in_progress,completed", statuses)
	}
	// The same prefix asks again: allow once remembers nothing.
	p.runBash("call_2", "touch again")
	if n := len(p.questions()); n != 2 {
		t.Errorf("%d questions after a second touch, want 2", n)
	}
}

func TestPermissionAlwaysAllowRemembersTheSubcommand(t *testing.T) {
	p := startPermDaemon(t, "allow_always")
	p.runBash("call_1", "git init -q repo1")
	p.runBash("call_2", "git init -q repo2") // same prefix: not asked
	if n := len(p.questions()); n != 1 {
		t.Fatalf("%d questions, want 1 (always allow `git init`)", n)
	}
	for _, dir := range []string{"repo1", "repo2"} {
		if _, err := os.Stat(filepath.Join(p.cwd, dir, ".git")); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
	}
	p.runBash("call_3", "git commit --allow-empty -m x") // another subcommand: asked
	if n := len(p.questions()); n != 2 {
		t.Errorf("%d questions, want 2 (git commit is not git init)", n)
	}
}

func TestPermissionRejectTellsTheModel(t *testing.T) {
	p := startPermDaemon(t, "reject_once")
	if got := p.runBash("call_1", "touch nope"); got != "end_turn" {
		t.Fatalf("stopReason %q", got)
	}
	if _, err := os.Stat(filepath.Join(p.cwd, "nope")); err == nil {
		t.Error("a rejected command ran")
	}
	if got := p.toolResult(t, "call_1"); !strings.Contains(got, "declined") {
		t.Errorf("model read %q, want a decline", got)
	}
	c := p.card(t, "call_1")
	if c.final == nil || c.final.Status != "failed" {
		t.Errorf("rejected card ends %+v, want failed", c.final)
	}
}

func TestPermissionCancelledOutcomeCancelsTheTurn(t *testing.T) {
	p := startPermDaemon(t, "cancelled")
	if got := p.runBash("call_1", "touch nope"); got != "cancelled" {
		t.Fatalf("stopReason %q, want cancelled", got)
	}
	if _, err := os.Stat(filepath.Join(p.cwd, "nope")); err == nil {
		t.Error("a cancelled command ran")
	}
	if c := p.card(t, "call_1"); c.final == nil || c.final.Status != "failed" {
		t.Errorf("card ends %+v, want failed", c.final)
	}
}

func TestReadOnlyCommandsRunWithoutAsking(t *testing.T) {
	p := startPermDaemon(t, "reject_once")
	p.runBash("call_1", "ls -la && git status 2>/dev/null | head -3")
	if n := len(p.questions()); n != 0 {
		t.Errorf("%d questions for a read-only command", n)
	}
	if got := p.toolResult(t, "call_1"); strings.Contains(got, "declined") {
		t.Errorf("read-only command was declined: %q", got)
	}
}

func TestModeSwitchBothWays(t *testing.T) {
	p := startPermDaemon(t, "reject_once")
	// auto via session/set_mode: no question, the command runs.
	if err := p.Call(ctxT(t), "session/set_mode", map[string]any{"sessionId": p.sid, "modeId": "auto"}, nil); err != nil {
		t.Fatal(err)
	}
	p.runBash("call_1", "touch auto-ran")
	if _, err := os.Stat(filepath.Join(p.cwd, "auto-ran")); err != nil || len(p.questions()) != 0 {
		t.Errorf("auto mode: ran=%v questions=%d", err, len(p.questions()))
	}
	// read-only via the config option: a writing command is denied, unasked.
	var resp struct {
		ConfigOptions []struct{ ID, CurrentValue, Category string } `json:"configOptions"`
	}
	if err := p.Call(ctxT(t), "session/set_config_option", map[string]any{"sessionId": p.sid, "configId": "mode", "value": "read-only"}, &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.ConfigOptions) == 0 || resp.ConfigOptions[0].CurrentValue != "read-only" || resp.ConfigOptions[0].Category != "mode" {
		t.Errorf("config options %+v", resp.ConfigOptions)
	}
	p.runBash("call_2", "touch ro-ran")
	if _, err := os.Stat(filepath.Join(p.cwd, "ro-ran")); err == nil {
		t.Error("read-only mode ran a writing command")
	}
	if got := p.toolResult(t, "call_2"); !strings.Contains(got, "read-only") {
		t.Errorf("model read %q", got)
	}
	if n := len(p.questions()); n != 0 {
		t.Errorf("read-only mode asked %d questions", n)
	}
	// Each change was announced with current_mode_update.
	var modes []string
	for _, u := range p.Updates(p.sid) {
		if acptest.UpdateKind(u) == "current_mode_update" {
			var m struct {
				CurrentModeID string `json:"currentModeId"`
			}
			_ = json.Unmarshal(u, &m)
			modes = append(modes, m.CurrentModeID)
		}
	}
	if strings.Join(modes, ",") != "auto,read-only" {
		t.Errorf("current_mode_update sequence %v", modes)
	}
	// An unknown mode is a clear error.
	err := p.Call(ctxT(t), "session/set_mode", map[string]any{"sessionId": p.sid, "modeId": "yolo"}, nil)
	if rpcCode(err) != -32602 {
		t.Errorf("unknown mode: %v", err)
	}
}

// The mode and always-allow rules survive session/load.
func TestPermissionStateSurvivesLoad(t *testing.T) {
	p := startPermDaemon(t, "allow_always")
	p.runBash("call_1", "git init -q r1")
	if err := p.Call(ctxT(t), "session/set_mode", map[string]any{"sessionId": p.sid, "modeId": "read-only"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.Call(ctxT(t), "session/close", map[string]any{"sessionId": p.sid}, nil); err != nil {
		t.Fatal(err)
	}
	var loaded struct {
		Modes struct {
			CurrentModeID string `json:"currentModeId"`
		} `json:"modes"`
	}
	if err := p.Call(ctxT(t), "session/load", map[string]any{"sessionId": p.sid, "cwd": p.cwd, "mcpServers": []any{}}, &loaded); err != nil {
		t.Fatal(err)
	}
	if loaded.Modes.CurrentModeID != "read-only" {
		t.Errorf("mode after load %q", loaded.Modes.CurrentModeID)
	}
	if err := p.Call(ctxT(t), "session/set_mode", map[string]any{"sessionId": p.sid, "modeId": "ask"}, nil); err != nil {
		t.Fatal(err)
	}
	p.runBash("call_2", "git init -q r2")
	if n := len(p.questions()); n != 1 {
		t.Errorf("%d questions: the always-allow rule was lost on load", n)
	}
}

// A project's rule file is the repository's, not the user's: its allow
// rules apply only once the user approved that exact content. Until then
// the command is asked about (with an option to trust the file); after
// approval it runs unasked; an edit of the file asks again.
func TestProjectRulesNeedTheUsersTrust(t *testing.T) {
	p := startPermDaemon(t, "reject")
	rules := filepath.Join(p.cwd, ".dsh-acp", "permissions.json")
	write := func(content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(rules), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(rules, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"allow": ["touch from-rule"]}`)
	optionsOf := func(q json.RawMessage) []string {
		var r struct {
			Options []struct{ OptionID string } `json:"options"`
		}
		if err := json.Unmarshal(q, &r); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, o := range r.Options {
			ids = append(ids, o.OptionID)
		}
		return ids
	}

	p.runBash("call_1", "touch from-rule")
	qs := p.questions()
	if len(qs) != 1 {
		t.Fatalf("an unapproved allow rule ran the command unasked (%d questions)", len(qs))
	}
	if ids := optionsOf(qs[0]); len(ids) == 0 || ids[0] != "trust_project_rules" || !strings.Contains(string(qs[0]), "touch from-rule") {
		t.Errorf("the question does not offer to trust the rules it shows: %s", qs[0])
	}
	if _, err := os.Stat(filepath.Join(p.cwd, "from-rule")); err == nil {
		t.Fatal("the rejected command ran")
	}

	// The user trusts the file (the first allow_always option).
	p.SetResponder(acptest.PermissionResponder("allow_always"))
	p.runBash("call_2", "touch from-rule")
	if _, err := os.Stat(filepath.Join(p.cwd, "from-rule")); err != nil {
		t.Fatalf("the trusted rule's command did not run: %v", err)
	}
	// Approved: it now runs unasked.
	before := p.questionCount()
	p.runBash("call_3", "touch from-rule")
	if p.questionCount() != before {
		t.Error("a trusted rule still asks")
	}
	// An edited file is a new file: asked again.
	write(`{"allow": ["touch from-rule", "touch other"]}`)
	p.SetResponder(acptest.PermissionResponder("reject"))
	p.runBash("call_4", "touch from-rule")
	if p.questionCount() != before+1 {
		t.Error("an edited rule file applied without asking again")
	}
}
