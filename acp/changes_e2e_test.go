package acp_test

// Issue 26 end to end over stdio: change cards after the commands that
// changed files, live and on session/load, and /undo. These tests need the
// wiring described in internal/changes' doc (a tracker per session,
// tools.Tracked, the presenter's Contents, /undo routed).

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

// diffItem is one ACP diff content item.
type diffItem struct {
	Type    string  `json:"type"`
	Path    string  `json:"path"`
	OldText *string `json:"oldText"`
	NewText string  `json:"newText"`
	Content struct {
		Text string `json:"text"`
	} `json:"content"`
}

// changeCard is a change card as the client got it.
type changeCard struct {
	ID        string
	Title     string
	Diffs     map[string]diffItem // by path relative to the project
	Texts     []string
	Locations []struct {
		Path string `json:"path"`
		Line *int   `json:"line"`
	}
	raw json.RawMessage
}

// changeCards are the edit cards among raw updates, in order.
func changeCards(t *testing.T, raw []json.RawMessage, dir string) []changeCard {
	t.Helper()
	var out []changeCard
	for _, r := range raw {
		var u struct {
			Kind      string          `json:"sessionUpdate"`
			ID        string          `json:"toolCallId"`
			Title     string          `json:"title"`
			ToolKind  string          `json:"kind"`
			Status    string          `json:"status"`
			Content   []diffItem      `json:"content"`
			Locations json.RawMessage `json:"locations"`
		}
		if json.Unmarshal(r, &u) != nil || u.Kind != "tool_call" || u.ToolKind != "edit" {
			continue
		}
		if u.Status != "completed" {
			t.Errorf("change card %s opens %q", u.ID, u.Status)
		}
		c := changeCard{ID: u.ID, Title: u.Title, Diffs: map[string]diffItem{}, raw: r}
		for _, it := range u.Content {
			switch it.Type {
			case "diff":
				rel, err := filepath.Rel(dir, it.Path)
				if err != nil || !filepath.IsAbs(it.Path) {
					t.Errorf("diff path %q is not absolute under %s", it.Path, dir)
				}
				c.Diffs[rel] = it
			case "content":
				c.Texts = append(c.Texts, it.Content.Text)
			}
		}
		_ = json.Unmarshal(u.Locations, &c.Locations)
		out = append(out, c)
	}
	return out
}

// changesFixture is a daemon and a session in a project directory.
type changesFixture struct {
	t     *testing.T
	d     *daemon
	sid   string
	dir   string
	model *llmtest.Server
}

func newChangesFixture(t *testing.T, args []string, env ...string) *changesFixture {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "project")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// A model is configured: slash commands (/undo) are refused without one.
	model := llmtest.New(t)
	env = append([]string{"DSH_BASE_URL=" + model.URL(), "DSH_API_KEY=test-key"}, env...)
	d := startDaemon(t, acptest.ZedCapabilities(), args, env...)
	f := &changesFixture{t: t, d: d, dir: dir, model: model}
	f.write("notes.txt", "one\ntwo\nthree\n")
	f.write("old.txt", "old\n")
	f.sid = d.newSession(dir)
	return f
}

func (f *changesFixture) write(rel, content string) {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(f.dir, rel), []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *changesFixture) read(rel string) string {
	b, err := os.ReadFile(filepath.Join(f.dir, rel))
	if err != nil {
		return "<missing>"
	}
	return string(b)
}

// run types a prompt and returns the change cards it produced.
func (f *changesFixture) run(text string) []changeCard {
	f.t.Helper()
	from := len(f.d.Updates(f.sid))
	f.d.prompt(f.sid, text)
	return changeCards(f.t, f.d.Updates(f.sid)[from:], f.dir)
}

func one(t *testing.T, cs []changeCard, what string) changeCard {
	t.Helper()
	if len(cs) != 1 {
		t.Fatalf("%s: %d change cards, want 1: %+v", what, len(cs), cs)
	}
	return cs[0]
}

func textOf(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}

// Every kind of write made by a ! command gets its card with the right
// diffs, with the sandbox off and at workspace, and with no git on PATH.
func TestE2EChangeCardsOfCommands(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		env  []string
	}{
		{"sandbox off", []string{"--sandbox", "off"}, nil},
		{"workspace", []string{"--sandbox", "workspace"}, nil},
		{"no git on PATH", []string{"--sandbox", "off"}, []string{"PATH=" + pathWithout(t, "git")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newChangesFixture(t, c.args, c.env...)
			card := one(t, f.run("!sed -i 's/two/TWO/' notes.txt"), "sed -i")
			d := card.Diffs["notes.txt"]
			if textOf(d.OldText) != "one\ntwo\nthree\n" || d.NewText != "one\nTWO\nthree\n" {
				t.Errorf("sed -i diff %+v", d)
			}
			if card.Title != "Changed 1 file: notes.txt" || len(card.Locations) != 1 || card.Locations[0].Line == nil || *card.Locations[0].Line != 2 {
				t.Errorf("sed -i card %q %+v", card.Title, card.Locations)
			}
			card = one(t, f.run("!cat > notes.txt <<'EOF'\nrewritten\nEOF"), "heredoc")
			if d := card.Diffs["notes.txt"]; textOf(d.OldText) != "one\nTWO\nthree\n" || d.NewText != "rewritten\n" {
				t.Errorf("heredoc diff %+v", d)
			}
			card = one(t, f.run("!rm old.txt"), "rm")
			if d := card.Diffs["old.txt"]; textOf(d.OldText) != "old\n" || d.NewText != "" {
				t.Errorf("rm diff %+v", d)
			}
			card = one(t, f.run("!mv notes.txt moved.txt"), "mv")
			if len(card.Diffs) != 2 || card.Diffs["moved.txt"].OldText != nil || card.Diffs["notes.txt"].NewText != "" {
				t.Errorf("mv diffs %+v", card.Diffs)
			}
			card = one(t, f.run("!echo fresh > created.txt"), "create")
			if d := card.Diffs["created.txt"]; d.OldText != nil || d.NewText != "fresh\n" || !strings.Contains(string(card.raw), `"type":"diff"`) {
				t.Errorf("create diff %+v", d)
			}
			card = one(t, f.run("!printf 'a\\0b' > app.bin"), "binary")
			if len(card.Diffs) != 0 || len(card.Texts) != 1 || !strings.Contains(card.Texts[0], "app.bin (created, binary, 3 B)") {
				t.Errorf("binary card %+v", card)
			}
			if cs := f.run("!cat moved.txt; ls"); len(cs) != 0 {
				t.Errorf("a command that wrote nothing got a change card: %+v", cs)
			}
		})
	}
}

// A command at the read-only level gets no change card (and writes
// nothing).
func TestE2EReadOnlyCommandHasNoChangeCard(t *testing.T) {
	f := newChangesFixture(t, []string{"--sandbox", "workspace"})
	f.d.prompt(f.sid, "/sandbox read-only")
	if cs := f.run("!cat notes.txt; echo x > notes.txt"); len(cs) != 0 {
		t.Errorf("a read-only command got a change card: %+v", cs)
	}
	if f.read("notes.txt") != "one\ntwo\nthree\n" {
		t.Errorf("notes.txt changed: %q", f.read("notes.txt"))
	}
}

// A model bash call and a background task each get their card; the model's
// result text is the same as without tracking.
func TestE2EChangeCardsOfModelCalls(t *testing.T) {
	model := llmtest.New(t)
	dir := filepath.Join(t.TempDir(), "project")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("one\n"), 0o644)
	d := startModelDaemon(t, daemonBinary(t), t.TempDir(), model, []string{"--sandbox", "off"}, "DSH_MODE=auto")
	sid := d.newSession(dir)
	model.Push(
		llmtest.Calls(llmtest.Call{ID: "call_fg", Name: "bash", Args: `{"command":"echo two >> notes.txt","description":"Append"}`}),
		llmtest.Calls(llmtest.Call{ID: "call_bg", Name: "bash", Args: `{"command":"sleep 0.3; echo bg > bg.txt","description":"Later","run_in_background":true}`}),
		llmtest.Reply("done"),
	)
	d.prompt(sid, "append and start")
	if got := toolResultOf(t, model, "call_fg"); got != "(no output)" {
		t.Errorf("the model read %q", got)
	}
	d.waitFor(func() bool { return len(changeCards(t, d.Updates(sid), dir)) == 2 })
	cs := changeCards(t, d.Updates(sid), dir)
	if cs[0].ID != "changes-call_fg" || cs[0].Diffs["notes.txt"].NewText != "one\ntwo\n" {
		t.Errorf("model call card %+v", cs[0])
	}
	if cs[1].ID != "changes-call_bg" || cs[1].Diffs["bg.txt"].NewText != "bg\n" {
		t.Errorf("background card %+v", cs[1])
	}
}

// session/load redraws every change card exactly as live; /undo and /undo
// turn restore files on disk, refuse a file edited since, are journaled,
// and never undo twice, also after a reload.
func TestE2EUndoAndReload(t *testing.T) {
	f := newChangesFixture(t, []string{"--sandbox", "off"})
	f.run("!echo a2 > notes.txt")
	f.run("!echo b > b.txt && echo c > c.txt")
	undo := one(t, f.run("/undo"), "/undo")
	if f.read("b.txt") != "<missing>" || f.read("c.txt") != "<missing>" || f.read("notes.txt") != "a2\n" {
		t.Fatalf("after /undo: b %q c %q notes %q", f.read("b.txt"), f.read("c.txt"), f.read("notes.txt"))
	}
	if !strings.HasPrefix(undo.Title, "Undid changes to 2 files") {
		t.Errorf("undo card %q", undo.Title)
	}
	f.run("!echo a3 > notes.txt && echo d > d.txt")
	f.write("notes.txt", "edited by hand\n")
	undo = one(t, f.run("/undo turn"), "/undo turn")
	if f.read("notes.txt") != "edited by hand\n" || f.read("d.txt") != "<missing>" {
		t.Fatalf("after /undo turn: notes %q d %q", f.read("notes.txt"), f.read("d.txt"))
	}
	if !strings.Contains(strings.Join(undo.Texts, "\n"), "notes.txt changed since; not undone") ||
		f.d.count(f.sid, "agent_message_chunk", "notes.txt changed since; not undone") == 0 {
		t.Errorf("the refusal is not named: %+v", undo)
	}
	live := changeCards(t, f.d.Updates(f.sid), f.dir)

	// Reload in another daemon: every change card comes back as it was.
	if err := f.d.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	if err := f.d.Wait(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	d2 := startDaemonIn(t, f.d.stateDir, acptest.ZedCapabilities(), []string{"--sandbox", "off"},
		"DSH_BASE_URL="+f.model.URL(), "DSH_API_KEY=test-key")
	raw, err := d2.loadSession(f.sid, f.dir)
	if err != nil {
		t.Fatal(err)
	}
	replayed := changeCards(t, raw, f.dir)
	if len(replayed) != len(live) {
		t.Fatalf("%d change cards replayed, %d live", len(replayed), len(live))
	}
	for i := range live {
		if string(live[i].raw) != string(replayed[i].raw) {
			t.Errorf("card %d differs:\nlive   %s\nreplay %s", i, live[i].raw, replayed[i].raw)
		}
	}
	// The journal knows what was undone: the next /undo takes back the
	// first command (notes.txt back to what it held before), not one
	// already undone.
	f.d = d2
	f.write("notes.txt", "a2\n")
	one(t, f.run("/undo"), "/undo after reload")
	if f.read("notes.txt") != "one\ntwo\nthree\n" {
		t.Errorf("notes.txt %q after the reloaded /undo", f.read("notes.txt"))
	}
}
