package presentation

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/tools"
)

// memContents is a content store in memory.
type memContents map[string]string

func (m memContents) Get(h string) ([]byte, error) {
	if s, ok := m[h]; ok {
		return []byte(s), nil
	}
	return nil, errors.New("not kept")
}

func changeEvent() (event.FileChanges, memContents) {
	c := memContents{"o1": "one\ntwo\n", "n1": "one\nTWO\n", "n2": "package b\n", "o3": "gone\n", "bin": "\x00\x01"}
	return event.FileChanges{ID: "changes-c1", Call: "c1", Dir: "/w", Files: []event.FileChange{
		{Path: "README.md", Op: event.ChangeModified, Old: "o1", New: "n1", OldSize: 8, NewSize: 8, Line: 2},
		{Path: "src/b.go", Op: event.ChangeCreated, New: "n2", NewSize: 10, Line: 1},
		{Path: "old.txt", Op: event.ChangeDeleted, Old: "o3", OldSize: 5, Line: 1},
		{Path: "app.bin", Op: event.ChangeCreated, New: "bin", NewSize: 12288, Binary: true},
		{Path: "big.log", Op: event.ChangeModified, OldSize: 3 << 20, NewSize: 3 << 20, Large: true},
		{Path: "swept.txt", Op: event.ChangeModified, Old: "o1", New: "missing", NewSize: 7},
	}}, c
}

func TestChangesCard(t *testing.T) {
	ev, contents := changeEvent()
	u := ChangesCard(ev, contents)
	tc := u.ToolCall
	if tc == nil {
		t.Fatalf("not a tool_call: %+v", u)
	}
	if tc.ToolCallId != "changes-c1" || tc.Kind != acp.ToolKindEdit || tc.Status != acp.ToolCallStatusCompleted {
		t.Errorf("id %q kind %q status %q", tc.ToolCallId, tc.Kind, tc.Status)
	}
	if want := "Changed 6 files: README.md, src/b.go, old.txt, and 3 more"; tc.Title != want {
		t.Errorf("title %q, want %q", tc.Title, want)
	}
	if len(tc.Content) != 4 {
		t.Fatalf("%d content items, want 3 diffs and a list", len(tc.Content))
	}
	mod, created, deleted := tc.Content[0].Diff, tc.Content[1].Diff, tc.Content[2].Diff
	if mod == nil || mod.Path != "/w/README.md" || mod.OldText == nil || *mod.OldText != "one\ntwo\n" || mod.NewText != "one\nTWO\n" {
		t.Errorf("modified: %+v", mod)
	}
	if created == nil || created.Path != "/w/src/b.go" || created.OldText != nil || created.NewText != "package b\n" {
		t.Errorf("created: %+v", created)
	}
	if deleted == nil || deleted.OldText == nil || *deleted.OldText != "gone\n" || deleted.NewText != "" {
		t.Errorf("deleted: %+v", deleted)
	}
	list := tc.Content[3].Content.Content.Text.Text
	for _, want := range []string{"- app.bin (created, binary, 12.0 KiB)", "- big.log (modified, over 1 MiB, 3.0 MiB)", "- swept.txt (modified, content no longer kept, 7 B)"} {
		if !strings.Contains(list, want) {
			t.Errorf("list %q lacks %q", list, want)
		}
	}
	var locs []string
	for _, l := range tc.Locations {
		s := l.Path
		if l.Line != nil {
			s += fmt.Sprintf(":%d", *l.Line)
		}
		locs = append(locs, s)
	}
	if got := strings.Join(locs, " "); got != "/w/README.md:2 /w/src/b.go:1 /w/old.txt /w/app.bin /w/big.log /w/swept.txt" {
		t.Errorf("locations %s", got)
	}
	// On the wire: a diff item, and no oldText for the created file.
	b, err := json.Marshal(tc.Content[1])
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); !strings.Contains(got, `"type":"diff"`) || strings.Contains(got, "oldText") {
		t.Errorf("created diff on the wire: %s", got)
	}
}

// Past MaxDiffedFiles, files are listed by name and size, not diffed.
func TestChangesCardManyFiles(t *testing.T) {
	contents := memContents{"n": "x\n"}
	ev := event.FileChanges{ID: "changes-c", Dir: "/w"}
	for i := 0; i < MaxDiffedFiles+5; i++ {
		ev.Files = append(ev.Files, event.FileChange{Path: fmt.Sprintf("f%03d", i), Op: event.ChangeCreated, New: "n", NewSize: 2})
	}
	tc := ChangesCard(ev, contents).ToolCall
	if len(tc.Content) != MaxDiffedFiles+1 || len(tc.Locations) != MaxDiffedFiles {
		t.Fatalf("%d items, %d locations", len(tc.Content), len(tc.Locations))
	}
	if list := tc.Content[MaxDiffedFiles].Content.Content.Text.Text; strings.Count(list, "\n- ") != 5 || !strings.Contains(list, "- f054 (created, 2 B)") {
		t.Errorf("list %q", list)
	}
}

func TestChangesTitleOfUndo(t *testing.T) {
	for _, c := range []struct {
		ev   event.FileChanges
		want string
	}{
		{event.FileChanges{ID: "undo-1", Undoes: []string{"changes-c"}, Files: []event.FileChange{{Path: "a"}}}, "Undid changes to 1 file: a"},
		{event.FileChanges{ID: "undo-2", Undoes: []string{"changes-c"}, Refused: []string{"notes.txt changed since; not undone"}}, "Undid nothing: 1 file changed since"},
		{event.FileChanges{ID: "changes-c", Files: []event.FileChange{{Path: "a"}, {Path: "b"}}}, "Changed 2 files: a, b"},
	} {
		if got := ChangesTitle(c.ev); got != c.want {
			t.Errorf("%s: %q, want %q", c.ev.ID, got, c.want)
		}
	}
	ev := event.FileChanges{ID: "undo-2", Undoes: []string{"changes-c"}, Refused: []string{"notes.txt changed since; not undone"}}
	tc := ChangesCard(ev, memContents{}).ToolCall
	if len(tc.Content) != 1 || !strings.Contains(tc.Content[0].Content.Content.Text.Text, "notes.txt changed since; not undone") {
		t.Errorf("refusals not shown: %+v", tc.Content)
	}
}

// The presenter draws the card the same way live and on replay, with and
// without terminals, and as one completed tool_call after the command's.
func TestPresenterDrawsChangesAlike(t *testing.T) {
	ev, contents := changeEvent()
	var got [][]byte
	for _, replay := range []bool{false, true} {
		for _, term := range []bool{false, true} {
			var sent []acp.SessionUpdate
			p := NewPresenter(PresenterOptions{Send: func(u acp.SessionUpdate) { sent = append(sent, u) },
				Cards: tools.NewRegistry(), Caps: Caps{Terminal: term}, Cwd: "/w", Replay: replay, Contents: contents})
			p.Emit(ev)
			if len(sent) != 1 {
				t.Fatalf("replay %v terminal %v: %d updates", replay, term, len(sent))
			}
			b, err := json.Marshal(sent[0])
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, b)
		}
	}
	for i := 1; i < len(got); i++ {
		if !reflect.DeepEqual(got[i], got[0]) {
			t.Errorf("drawing %d differs:\n%s\n%s", i, got[i], got[0])
		}
	}
}
