package acp_test

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

// Zed's newer session updates over the real binary (issue 29): notices for
// out-of-turn facts and compaction entries, each only for a client that
// opted in at initialize, today's text for one that did not.

// optedIn is Zed's capabilities plus clientCapabilities.session's opt-ins.
func optedIn(kinds ...string) map[string]any {
	caps := maps.Clone(acptest.ZedCapabilities())
	session := map[string]any{}
	for _, k := range kinds {
		session[k] = map[string]any{}
	}
	caps["session"] = session
	return caps
}

// startWithModel runs the daemon with caps and the scripted model.
func startWithModel(t *testing.T, caps map[string]any, model *llmtest.Server) *daemon {
	t.Helper()
	return startDaemonIn(t, t.TempDir(), caps, nil, "DSH_BASE_URL="+model.URL(), "DSH_API_KEY=test-key")
}

// updatesOf are sid's updates of kind, decoded.
func updatesOf[T any](t *testing.T, d *daemon, sid, kind string) []T {
	t.Helper()
	var out []T
	for _, u := range d.Updates(sid) {
		if acptest.UpdateKind(u) != kind {
			continue
		}
		var v T
		if err := json.Unmarshal(u, &v); err != nil {
			t.Fatalf("bad %s %s: %v", kind, u, err)
		}
		out = append(out, v)
	}
	return out
}

type noticeUpdate struct {
	Severity    string `json:"severity"`
	Title       string `json:"title"`
	Description string `json:"description"`
}

// An MCP server that cannot start is a warning notice for a client that
// takes notices, and stays the agent message text it was for one that
// does not (never both).
func TestZedMCPStartFailureIsANotice(t *testing.T) {
	broken := []any{map[string]any{"name": "broken", "command": "/nonexistent/dsh-mcp-server", "args": []string{}, "env": []any{}}}
	open := func(d *daemon) string {
		var r struct {
			SessionID string `json:"sessionId"`
		}
		if err := d.Call(ctxT(t), "session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": broken}, &r); err != nil {
			t.Fatalf("session/new: %v", err)
		}
		return r.SessionID
	}

	d := startDaemon(t, optedIn("notices"), nil)
	sid := open(d)
	d.waitFor(func() bool { return d.count(sid, "notice", "broken") > 0 })
	ns := updatesOf[noticeUpdate](t, d, sid, "notice")
	if len(ns) != 1 || ns[0].Severity != "warning" || ns[0].Title != `MCP server "broken" is not available` ||
		!strings.Contains(ns[0].Description, "Its tools are missing from this session.") {
		t.Errorf("notices %+v", ns)
	}
	if n := d.count(sid, "agent_message_chunk", "broken"); n != 0 {
		t.Errorf("the failure also came as %d text chunks", n)
	}

	plain := startDaemon(t, acptest.ZedCapabilities(), nil)
	psid := open(plain)
	plain.waitFor(func() bool {
		return plain.count(psid, "agent_message_chunk", `MCP server \"broken\" is not available: `) > 0
	})
	if n := plain.count(psid, "notice", ""); n != 0 {
		t.Errorf("a client without notices got %d", n)
	}
}

type compactionEntry struct {
	ID      string `json:"compactionId"`
	Status  string `json:"status"`
	Summary []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"summary"`
}

// /compact is a compaction entry live, with the model's summary, and the
// same entry (same id) when the session is loaded again; no text chunk
// tells it twice.
func TestZedCompactionIsAnEntryLiveAndOnReplay(t *testing.T) {
	m := &sessModel{lines: 5}
	srv := llmtest.New(t)
	srv.Respond(m.respond)
	d := startWithModel(t, optedIn("compaction"), srv)
	cwd := t.TempDir()
	sid := d.newSession(cwd)
	for _, p := range []string{"list one", "list two", "list three"} {
		if got := d.prompt(sid, p); got != "end_turn" {
			t.Fatalf("%s: %q", p, got)
		}
	}
	if got := d.prompt(sid, "/compact"); got != "end_turn" {
		t.Fatalf("/compact: %q", got)
	}
	live := updatesOf[compactionEntry](t, d, sid, "compaction_update")
	if len(live) != 1 || live[0].ID == "" || live[0].Status != "completed" || len(live[0].Summary) != 2 ||
		!strings.Contains(live[0].Summary[0].Text, "[context compacted: ") || !strings.HasPrefix(live[0].Summary[1].Text, "Summary 1:") {
		t.Fatalf("live compaction entries %+v", live)
	}
	if n := d.count(sid, "agent_message_chunk", "[context compacted"); n != 0 {
		t.Errorf("the compaction also came as %d text chunks", n)
	}

	if err := d.Call(ctxT(t), "session/close", map[string]any{"sessionId": sid}, nil); err != nil {
		t.Fatalf("session/close: %v", err)
	}
	before := len(d.Updates(sid))
	if err := d.Call(ctxT(t), "session/load", map[string]any{"sessionId": sid, "cwd": cwd, "mcpServers": []any{}}, nil); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	time.Sleep(200 * time.Millisecond) // updates that follow the reply
	var replayed []compactionEntry
	for _, u := range d.Updates(sid)[before:] {
		if acptest.UpdateKind(u) == "compaction_update" {
			var c compactionEntry
			_ = json.Unmarshal(u, &c)
			replayed = append(replayed, c)
		}
	}
	if len(replayed) != 1 || replayed[0].ID != live[0].ID || len(replayed[0].Summary) != 2 || replayed[0].Summary[1].Text != live[0].Summary[1].Text {
		t.Errorf("replayed compaction entries %+v; live %+v", replayed, live)
	}
}

// With no bubblewrap and the default level, a client that takes notices
// is told once, as a warning notice after the session/new reply, that
// commands run without a sandbox — not in the first turn's text.
func TestZedSandboxUnavailableIsANotice(t *testing.T) {
	d := startDaemon(t, optedIn("notices"), nil, "PATH="+pathWithout(t, "bwrap"))
	sid := d.newSession(t.TempDir())
	d.waitFor(func() bool { return d.count(sid, "notice", "without a sandbox") > 0 })
	ns := updatesOf[noticeUpdate](t, d, sid, "notice")
	if len(ns) != 1 || ns[0].Severity != "warning" || ns[0].Title != "Commands run without a sandbox" ||
		!strings.Contains(ns[0].Description, "bubblewrap (bwrap) not found") {
		t.Errorf("notices %+v", ns)
	}
	if got := d.prompt(sid, "!echo ran"); got != "end_turn" {
		t.Fatalf("!echo: %q", got)
	}
	if n := d.count(sid, "agent_message_chunk", "without a sandbox"); n != 0 {
		t.Errorf("also told as text %d times", n)
	}
}
