package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
)

// A command that changes real files shows their unified diff in the chat,
// and `dsh-acp replay` draws the same diff from the change store, by
// session id and by journal path; without the store it lists the files as
// not kept.
func TestChatAndReplayShowChangeDiffs(t *testing.T) {
	bin := acptest.BuildBinary(t)
	state, project := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(project, "notes.txt"), []byte("one\ntwo\nthree\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	chat := exec.Command(bin, "chat")
	chat.Dir, chat.Env = project, chatEnv(t, state)
	chat.Stdin = strings.NewReader("!sed -i s/two/TWO/ notes.txt\n!printf 'fresh\\n' > new.txt\n")
	out, err := chat.CombinedOutput()
	if err != nil {
		t.Fatalf("chat: %v\n%s", err, out)
	}
	diffs := []string{
		"┌ Changed 1 file: notes.txt\n│ notes.txt\n│ @@ -1,3 +1,3 @@\n│  one\n│ -two\n│ +TWO\n│  three\n└ ✓ +1 −1\n",
		"┌ Changed 1 file: new.txt\n│ new.txt (new file)\n│ @@ -0,0 +1 @@\n│ +fresh\n└ ✓ +1 −0\n",
	}
	for _, want := range diffs {
		if !strings.Contains(string(out), want) {
			t.Errorf("the chat lacks\n%s\nin\n%s", want, out)
		}
	}
	id := bannerSession(t, string(out))
	journal := filepath.Join(state, "chat", "sessions", id+".jsonl")
	for _, arg := range []string{id, journal} {
		rep := exec.Command(bin, "replay", arg)
		rep.Env = chatEnv(t, state)
		got, err := rep.CombinedOutput()
		if err != nil {
			t.Fatalf("replay %s: %v\n%s", arg, err, got)
		}
		for _, want := range diffs {
			if !strings.Contains(string(got), want) {
				t.Errorf("replay %s lacks\n%s\nin\n%s", arg, want, got)
			}
		}
	}

	// A journal moved away from its state directory has no store.
	moved := filepath.Join(t.TempDir(), "session.jsonl")
	data, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(moved, data, 0o600); err != nil {
		t.Fatal(err)
	}
	rep := exec.Command(bin, "replay", moved)
	rep.Env = chatEnv(t, state)
	got, err := rep.CombinedOutput()
	if err != nil || !strings.Contains(string(got), "- notes.txt (modified, content no longer kept, 14 B)") {
		t.Errorf("replay of a moved journal: %v\n%s", err, got)
	}
}
