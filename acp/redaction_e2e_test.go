package acp_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

// A command that prints a secret the user let through (--allow-env
// GH_TOKEN), or the daemon's own API key, shows "[redacted: NAME]" instead:
// in the card, in the model's tool result and in the journal, also when
// the value reaches the daemon in two pieces.
func TestE2ERedactsAllowedSecrets(t *testing.T) {
	const token = "ghp_e2eRedactionToken0123456789abcdef"
	const key = "sk-e2e-daemon-api-key-0123456789"
	model := llmtest.New(t)
	d := startModelDaemon(t, daemonBinary(t), t.TempDir(), model, []string{"--allow-env", "GH_TOKEN"},
		"GH_TOKEN="+token, "DSH_API_KEY="+key)
	cwd := t.TempDir()
	if err := os.WriteFile(filepath.Join(cwd, "key.txt"), []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sid := d.newSessionOnly(cwd)

	// The token in two writes 200 ms apart (two pipe reads, two chunks),
	// whole on stderr, and the key from a file.
	cmd := `printf 'token=%s' "${GH_TOKEN:0:12}"; sleep 0.2; printf '%s\n' "${GH_TOKEN:12}"; echo "$GH_TOKEN" >&2; cat key.txt`
	model.Push(
		llmtest.Calls(llmtest.Call{ID: "call_1", Name: "bash", Args: `{"command":` + jsonString(cmd) + `,"description":"Print the token"}`}),
		llmtest.Reply("done"),
	)
	d.promptExpect(sid, "print it", "end_turn")
	d.promptExpect(sid, `!printf '%s' "$GH_TOKEN"`, "end_turn")
	d.closeAndWait()

	result := toolResultOf(t, model, "call_1")
	var updates bytes.Buffer
	for _, u := range d.Updates(sid) {
		updates.Write(u)
	}
	journal, err := os.ReadFile(d.journalFilePath(sid))
	if err != nil {
		t.Fatal(err)
	}
	for what, text := range map[string]string{"the model's tool result": result, "the cards": updates.String(), "the journal": string(journal)} {
		for _, secret := range []string{token, key, token[12:]} {
			if strings.Contains(text, secret) {
				t.Errorf("%s carries %q", what, secret)
			}
		}
		if !strings.Contains(text, "[redacted: GH_TOKEN]") || !strings.Contains(text, "[redacted: API key]") {
			t.Errorf("%s does not say what was redacted:\n%s", what, text)
		}
	}
	if !strings.Contains(result, "token=[redacted: GH_TOKEN]\n") {
		t.Errorf("the split token is not redacted in place: %q", result)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s) // a string always encodes
	return string(b)
}
