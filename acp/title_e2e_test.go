package acp_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

// titles are the titles of the session_info_update updates in raw.
func titles(t *testing.T, raw []json.RawMessage) []string {
	t.Helper()
	var out []string
	for _, u := range raw {
		if acptest.UpdateKind(u) != "session_info_update" {
			continue
		}
		var info struct {
			Title *string `json:"title"`
		}
		if err := json.Unmarshal(u, &info); err != nil || info.Title == nil {
			t.Fatalf("session_info_update without a title: %s", u)
		}
		out = append(out, *info.Title)
	}
	return out
}

// The first prompt names the thread at once: session_info_update is the
// session's first update, sent while the turn still runs; later prompts do
// not rename it; session/load sends it again; and it is the title
// session/list shows.
func TestSessionTitle(t *testing.T) {
	state := t.TempDir()
	d := startDaemonIn(t, state, acptest.ZedCapabilities(), nil)
	cwd := t.TempDir()
	sid := d.newSession(cwd)
	marker := acptest.NewMarker()
	reply := startCommand(t, d, sid, "export M="+marker+"; sleep 600 # first prompt\nsecond line")
	waitMarkedProcs(t, marker, 1)
	raw := d.Updates(sid)
	// The slash commands follow the session/new reply; the prompt's first
	// update is the title.
	turn := slices.DeleteFunc(slices.Clone(raw), func(u json.RawMessage) bool {
		return acptest.UpdateKind(u) == "available_commands_update"
	})
	if len(turn) == 0 || acptest.UpdateKind(turn[0]) != "session_info_update" {
		t.Fatalf("the turn's first update is not the session's title: %s", raw)
	}
	want := "!export M=" + marker + "; sleep 600 # first prompt"
	if got := titles(t, raw); len(got) != 1 || got[0] != want {
		t.Fatalf("titles while the first turn runs: %q, want [%q]", got, want)
	}
	if err := d.Notify(ctxT(t), "session/cancel", map[string]any{"sessionId": sid}); err != nil {
		t.Fatal(err)
	}
	<-reply
	d.promptExpect(sid, "!echo another prompt", "end_turn")
	if got := titles(t, d.Updates(sid)); len(got) != 1 {
		t.Errorf("a later prompt renamed the thread: %q", got)
	}
	page := d.listSessions(map[string]any{"cwd": cwd})
	if len(page.Sessions) != 1 || page.Sessions[0].Title == nil || *page.Sessions[0].Title != want {
		t.Errorf("session/list: %+v, want the title %q", page.Sessions, want)
	}
	d.closeAndWait()

	d2 := startDaemonIn(t, state, acptest.ZedCapabilities(), nil)
	loaded, err := d2.loadSession(sid, cwd)
	if err != nil {
		t.Fatal(err)
	}
	if got := titles(t, loaded); len(got) != 1 || got[0] != want {
		t.Errorf("titles on load: %q, want [%q]", got, want)
	}
	d2.promptExpect(sid, "!echo after load", "end_turn")
	if got := titles(t, d2.Updates(sid)); len(got) != 1 {
		t.Errorf("a prompt after load renamed the thread: %q", got)
	}
}

// A session whose first prompt is blank has no title, in session/list and
// on the wire alike.
func TestSessionWithoutTitle(t *testing.T) {
	model := llmtest.New(t, llmtest.Reply("nothing to do"))
	d := startDaemon(t, acptest.ZedCapabilities(), nil,
		"DSH_BASE_URL="+model.URL(), "DSH_API_KEY=test-key", "XDG_CONFIG_HOME="+t.TempDir())
	cwd := t.TempDir()
	sid := d.newSession(cwd)
	d.promptExpect(sid, " \n ", "end_turn")
	d.promptExpect(sid, "!echo named later", "end_turn")
	if got := titles(t, d.Updates(sid)); len(got) != 0 {
		t.Errorf("titles %q for a session session/list shows untitled", got)
	}
	if page := d.listSessions(map[string]any{"cwd": cwd}); len(page.Sessions) != 1 || page.Sessions[0].Title != nil {
		t.Errorf("session/list: %+v", page.Sessions)
	}
}
