//go:build linux

package acp_test

import (
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
)

// With no API key, the daemon still answers its slash commands: each is a
// turn that ends with the daemon's text, never the auth-required error.
// /compact and an unknown "/word", which need the model, say so.
func TestSlashCommandsAnswerWithoutAKey(t *testing.T) {
	d := startDaemon(t, acptest.ZedCapabilities(), nil)
	sid := d.newSession(t.TempDir())
	for _, tc := range []struct{ text, want string }{
		{"/help", "/compact"},
		{"/mode auto", "Permission mode: auto"},
		{"/sandbox off", "Sandbox: off"},
		{"/usage", "Context:"},
		{"/model", "Model: "},
		{"/compact", "no API key is configured"},
		{"/bogus now", "/bogus is not a command"},
	} {
		before := len(d.Updates(sid))
		if got := d.prompt(sid, tc.text); got != "end_turn" {
			t.Fatalf("%s: stopReason %q", tc.text, got)
		}
		var text strings.Builder
		for _, u := range decodeUpdates(t, d.Updates(sid)[before:]) {
			if u.Kind == "agent_message_chunk" {
				text.WriteString(u.ChunkText)
			}
		}
		if !strings.Contains(text.String(), tc.want) {
			t.Errorf("%s answered %q, want it to say %q", tc.text, text.String(), tc.want)
		}
	}
	assertAuthRequired(t, d, sid) // a prompt for the model still needs the key
}
