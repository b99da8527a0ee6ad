package acp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

// Issue 29 end to end over stdio: a command's write in a second project
// folder (additionalDirectories) gets its change card, named by absolute
// path; /undo puts the file back on disk; session/load in another daemon
// redraws the card as it was, and its /undo takes back the next change
// there. At the workspace level through real bubblewrap, and with the
// sandbox off.
func TestE2EChangeCardsInAdditionalDirectory(t *testing.T) {
	for _, level := range []string{"off", "workspace"} {
		t.Run(level, func(t *testing.T) {
			if level != "off" {
				needSandbox(t)
			}
			tree := newSandboxTree(t)
			second := filepath.Join(tree.root, "second")
			writeAt(t, filepath.Join(second, "f"), "before\n")
			writeAt(t, filepath.Join(tree.cwd, "f"), "main\n")
			f := newRootsFixture(t, tree.cwd, second, level)

			card := one(t, f.run("!echo x > "+second+"/f"), "write in the second folder")
			d, ok := card.Diffs["second/f"]
			if !ok || textOf(d.OldText) != "before\n" || d.NewText != "x\n" {
				t.Fatalf("no diff of %s/f in the card: %+v", second, card)
			}
			if card.Title != "Changed 1 file: "+second+"/f" || len(card.Locations) != 1 || card.Locations[0].Path != second+"/f" {
				t.Errorf("card title %q locations %+v", card.Title, card.Locations)
			}
			one(t, f.run("!echo y > "+second+"/f; echo main2 > f"), "write in both folders")

			undo := one(t, f.run("/undo"), "/undo")
			if got, main := readAt(filepath.Join(second, "f")), readAt(filepath.Join(tree.cwd, "f")); got != "x\n" || main != "main\n" {
				t.Fatalf("after /undo: second/f %q, project/f %q", got, main)
			}
			if !strings.HasPrefix(undo.Title, "Undid changes to 2 files") {
				t.Errorf("undo card %q", undo.Title)
			}
			live := changeCards(t, f.d.Updates(f.sid), tree.root)

			// Another daemon loads the session (no additionalDirectories
			// sent: restored from the journal): the same cards, and /undo
			// takes back the first command's write in the second folder.
			if err := f.d.CloseStdin(); err != nil {
				t.Fatal(err)
			}
			if err := f.d.Wait(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			f.d = startDaemonIn(t, f.d.stateDir, acptest.ZedCapabilities(), []string{"--sandbox", level},
				"DSH_BASE_URL="+f.model.URL(), "DSH_API_KEY=test-key")
			raw, err := f.d.loadSession(f.sid, tree.cwd)
			if err != nil {
				t.Fatal(err)
			}
			replayed := changeCards(t, raw, tree.root)
			if len(replayed) != len(live) || len(live) != 3 {
				t.Fatalf("%d change cards replayed, %d live (want 3)", len(replayed), len(live))
			}
			for i := range live {
				if string(live[i].raw) != string(replayed[i].raw) {
					t.Errorf("card %d differs:\nlive   %s\nreplay %s", i, live[i].raw, replayed[i].raw)
				}
			}
			one(t, f.run("/undo"), "/undo after reload")
			if got := readAt(filepath.Join(second, "f")); got != "before\n" {
				t.Errorf("second/f %q after the reloaded /undo, want it back to before", got)
			}
		})
	}
}

// rootsFixture is a daemon and a session in a project directory with a
// second folder; change cards are keyed by path relative to base (the
// folders' parent).
type rootsFixture struct {
	t     *testing.T
	d     *daemon
	sid   string
	base  string
	model *llmtest.Server
}

// newRootsFixture is a daemon at sandbox level and a session in cwd with
// second as its additional directory.
func newRootsFixture(t *testing.T, cwd, second, level string) *rootsFixture {
	t.Helper()
	model := llmtest.New(t) // slash commands (/undo) are refused without a model
	d := startDaemon(t, acptest.ZedCapabilities(), []string{"--sandbox", level},
		"DSH_BASE_URL="+model.URL(), "DSH_API_KEY=test-key")
	var r struct {
		SessionID string `json:"sessionId"`
	}
	params := map[string]any{"cwd": cwd, "mcpServers": []any{}, "additionalDirectories": []string{second}}
	if err := d.Call(ctxT(t), "session/new", params, &r); err != nil {
		t.Fatalf("session/new: %v", err)
	}
	return &rootsFixture{t: t, d: d, sid: r.SessionID, base: filepath.Dir(cwd), model: model}
}

// run types a prompt and returns the change cards it produced.
func (f *rootsFixture) run(text string) []changeCard {
	f.t.Helper()
	from := len(f.d.Updates(f.sid))
	f.d.prompt(f.sid, text)
	return changeCards(f.t, f.d.Updates(f.sid)[from:], f.base)
}

func writeAt(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readAt(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return "<missing>"
	}
	return string(b)
}
