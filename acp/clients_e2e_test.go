//go:build linux

package acp_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/sourcegraph/jsonrpc2"
)

// Issue 28 items 2–4: what every ACP client, not only Zed, is offered.

// optionKinds returns a question's options as id → kind, failing the test
// when a kind appears twice.
func optionKinds(t *testing.T, q json.RawMessage) map[string]string {
	t.Helper()
	var r struct {
		Options []struct{ OptionID, Kind, Name string } `json:"options"`
	}
	if err := json.Unmarshal(q, &r); err != nil {
		t.Fatal(err)
	}
	ids, kinds := map[string]string{}, map[string]int{}
	for _, o := range r.Options {
		ids[o.OptionID] = o.Kind
		if kinds[o.Kind]++; kinds[o.Kind] > 1 {
			t.Errorf("two options of kind %s: %s", o.Kind, q)
		}
	}
	if kinds["allow_once"] != 1 || kinds["reject_once"] != 1 {
		t.Errorf("want one allow_once and one reject_once: %s", q)
	}
	return ids
}

// Every question the daemon puts over the wire offers one option per kind:
// a command with a safe prefix, one without, one a project rule file the
// user has not trusted would run (the trust takes the allow_always slot),
// an MCP tool, a read-only MCP tool, and an MCP tool an untrusted project
// allowance file would run.
func TestEveryPermissionQuestionHasOneOptionPerKind(t *testing.T) {
	p := startPermDaemon(t, "reject_once")
	p.runBash("call_1", "git init -q repo") // safe prefix `git init`
	p.runBash("call_2", "sh -c 'echo hi > f'")
	writeFile(t, filepath.Join(p.cwd, ".dsh-acp", "permissions.json"), `{"allow": ["touch from-rule"]}`)
	p.runBash("call_3", "touch from-rule")
	qs := p.questions()
	if len(qs) != 3 {
		t.Fatalf("%d questions, want 3", len(qs))
	}
	wantAlways := []string{"allow_always", "", "trust_project_rules"}
	for i, q := range qs {
		ids := optionKinds(t, q)
		always := ""
		for id, kind := range ids {
			if kind == "allow_always" {
				always = id
			}
		}
		if always != wantAlways[i] {
			t.Errorf("question %d: allow_always option %q, want %q: %s", i+1, always, wantAlways[i], q)
		}
	}
	if !strings.Contains(string(qs[0]), "/allow-project git init") {
		t.Errorf("the session option does not say how to allow it for the project: %s", qs[0])
	}

	f := newMCPFixture(t, nil)
	f.setAnswer("reject_once")
	f.call("m1", "mcp__test__write_note", `{"name":"a.txt","text":"1"}`, "end_turn")
	f.call("m2", "mcp__test__echo", `{"text":"hi"}`, "end_turn")
	writeFile(t, filepath.Join(f.cwd, ".dsh-acp", "mcp.json"), `{"allow":[{"server":"test","tool":"write_note"}]}`)
	f.call("m3", "mcp__test__write_note", `{"name":"b.txt","text":"2"}`, "end_turn")
	mq := f.questions()
	if len(mq) != 3 {
		t.Fatalf("%d MCP questions, want 3", len(mq))
	}
	for i, q := range mq {
		ids := optionKinds(t, q)
		if want := map[bool]string{false: "allow_always", true: "trust_project_rules"}[i == 2]; ids[want] != "allow_always" {
			t.Errorf("MCP question %d: no %s as the allow_always: %s", i+1, want, q)
		}
	}
}

// Project scope is typed, never a button: /allow-project is offered in
// available_commands; it writes the rule into the project's file (a bad
// rule writes nothing), and the next matching command runs unasked — in
// this session and in a new session of the project.
func TestAllowProjectCommandWritesTheRuleAndTheNextCommandRunsUnasked(t *testing.T) {
	p := startPermDaemon(t, "reject_once")
	var offered bool
	for _, u := range p.Updates(p.sid) {
		if acptest.UpdateKind(u) == "available_commands_update" && strings.Contains(string(u), `"name":"allow-project"`) {
			offered = true
		}
	}
	if !offered {
		t.Error("available_commands does not offer /allow-project")
	}
	rules := filepath.Join(p.cwd, ".dsh-acp", "permissions.json")
	if got := p.prompt(p.sid, "/allow-project git"); got != "end_turn" {
		t.Fatalf("stopReason %q", got)
	}
	if _, err := os.Stat(rules); err == nil {
		t.Fatal("a program alone was saved for the project")
	}
	if got := p.prompt(p.sid, "/allow-project git init"); got != "end_turn" {
		t.Fatalf("stopReason %q", got)
	}
	if b, err := os.ReadFile(rules); err != nil || !strings.Contains(string(b), `"git init"`) {
		t.Fatalf("the project's rule file holds %q (%v)", b, err)
	}
	if p.daemon.count(p.sid, "agent_message_chunk", "Always allowed in this project: `git init`") != 1 {
		t.Error("/allow-project did not say what it saved")
	}
	p.runBash("call_1", "git init -q r1")
	p.sid = p.newSession(p.cwd) // a new session: the project's file alone allows it
	p.runBash("call_2", "git init -q r2")
	if n := p.questionCount(); n != 0 {
		t.Errorf("%d questions after /allow-project git init, want none", n)
	}
	for _, dir := range []string{"r1", "r2"} {
		if _, err := os.Stat(filepath.Join(p.cwd, dir, ".git")); err != nil {
			t.Errorf("%s did not run: %v", dir, err)
		}
	}
	p.runBash("call_3", "git commit --allow-empty -m x") // another prefix still asks
	if n := p.questionCount(); n != 1 {
		t.Errorf("%d questions for git commit, want 1", n)
	}
}

// The same for an MCP tool: /allow-project mcp:SERVER/TOOL writes
// .dsh-acp/mcp.json and the tool then runs unasked.
func TestAllowProjectCommandForAnMCPTool(t *testing.T) {
	f := newMCPFixture(t, nil)
	f.setAnswer("reject_once")
	f.mustTurn("/allow-project mcp:test/write_note", "end_turn")
	if b, err := os.ReadFile(filepath.Join(f.cwd, ".dsh-acp", "mcp.json")); err != nil || !strings.Contains(string(b), `"write_note"`) {
		t.Fatalf("mcp.json holds %q (%v)", b, err)
	}
	f.call("m1", "mcp__test__write_note", `{"name":"a.txt","text":"1"}`, "end_turn")
	if n := len(f.questions()); n != 0 {
		t.Errorf("%d questions after /allow-project, want none", n)
	}
	if got := f.resultFor("m1"); got != "wrote 1 bytes to a.txt" {
		t.Errorf("the model read %q", got)
	}
}

// The auth-required error's message itself says how to log in (acpx
// prints only the message); code and data stay.
func TestAuthRequiredMessageSaysHowToLogIn(t *testing.T) {
	d := startDaemon(t, acptest.ZedCapabilities(), nil)
	sid := d.newSession(t.TempDir())
	err := d.Call(ctxT(t), "session/prompt", promptParams(sid, "hello"), nil)
	var re *jsonrpc2.Error
	if !errors.As(err, &re) || re.Code != -32000 {
		t.Fatalf("prompt with no key: %v", err)
	}
	for _, want := range []string{"Authentication required", "dsh-acp login", "DSH_API_KEY"} {
		if !strings.Contains(re.Message, want) {
			t.Errorf("message %q does not say %q", re.Message, want)
		}
	}
	if re.Data == nil || !strings.Contains(string(*re.Data), "dsh-acp login") {
		t.Errorf("data lost its hint: %v", re.Data)
	}
}

// An unknown session on session/load and session/resume is -32002
// (resource not found) with a plain message — no file names.
func TestUnknownSessionIsResourceNotFound(t *testing.T) {
	d := startDaemon(t, acptest.ZedCapabilities(), nil)
	cwd := t.TempDir()
	for _, method := range []string{"session/load", "session/resume"} {
		err := d.Call(ctxT(t), method, map[string]any{"sessionId": "nope-123", "cwd": cwd, "mcpServers": []any{}}, nil)
		var re *jsonrpc2.Error
		if !errors.As(err, &re) || re.Code != -32002 {
			t.Errorf("%s of an unknown id: %v, want -32002", method, err)
			continue
		}
		if !strings.Contains(re.Message, "nope-123") || strings.Contains(re.Message, ".jsonl") || strings.Contains(re.Message, "stat") {
			t.Errorf("%s: message %q, want the id and no internals", method, re.Message)
		}
	}
}

// auth.logout is advertised only along with an auth method.
func TestLogoutAdvertisedOnlyWithAnAuthMethod(t *testing.T) {
	for _, tc := range []struct {
		caps map[string]any
		want bool
	}{{acptest.PlainCapabilities(), false}, {acptest.ZedCapabilities(), true}} {
		res := initialize(t, tc.caps)
		b, _ := json.Marshal(res)
		var r struct {
			AuthMethods       []json.RawMessage `json:"authMethods"`
			AgentCapabilities struct {
				Auth struct {
					Logout *struct{} `json:"logout"`
				} `json:"auth"`
			} `json:"agentCapabilities"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		if (r.AgentCapabilities.Auth.Logout != nil) != tc.want || (len(r.AuthMethods) > 0) != tc.want {
			t.Errorf("logout %v with %d auth methods, want both %v: %s", r.AgentCapabilities.Auth.Logout != nil, len(r.AuthMethods), tc.want, b)
		}
	}
}

// A lone `!` (or `!` and blanks) is answered by the daemon: a short line,
// nothing run, nothing sent to the model — and it needs no key.
func TestEmptyBangIsAnsweredLocally(t *testing.T) {
	p := startPermDaemon(t, "reject_once")
	for _, text := range []string{"!", "!   "} {
		before := len(p.Updates(p.sid))
		if got := p.prompt(p.sid, text); got != "end_turn" {
			t.Fatalf("%q: stopReason %q", text, got)
		}
		var said strings.Builder
		for _, u := range decodeUpdates(t, p.Updates(p.sid)[before:]) {
			if u.Kind == "tool_call" {
				t.Errorf("%q opened a card: something ran", text)
			}
			if u.Kind == "agent_message_chunk" {
				said.WriteString(u.ChunkText)
			}
		}
		if !strings.Contains(said.String(), "Nothing to run") {
			t.Errorf("%q answered %q", text, said.String())
		}
	}
	if n := len(p.model.Requests()); n != 0 {
		t.Errorf("the model got %d requests for an empty !", n)
	}
	d := startDaemon(t, acptest.ZedCapabilities(), nil) // no key
	if got := d.prompt(d.newSession(t.TempDir()), "!"); got != "end_turn" {
		t.Errorf("an empty ! without a key: stopReason %q", got)
	}
}
