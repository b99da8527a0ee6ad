package approval

import (
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/permission"
	"github.com/dsh-acp/dsh-acp/tools"
)

// The level a command the judge allowed runs at: read-only for what runs
// because it looks read-only (ask mode) and for everything in read-only
// mode; the session's for an allow rule's match, an always-allowed prefix,
// auto mode, and whenever the session is unconfined.
func TestCallLevel(t *testing.T) {
	ws := tools.Session{Level: executor.LevelWorkspace}
	tests := []struct {
		name    string
		session tools.Session
		req     permission.Request
		want    executor.Level
	}{
		{"ask, read-only command", ws, permission.Request{Mode: permission.ModeAsk, Command: "cat x"}, executor.LevelReadOnly},
		{"ask, allowed by rule", ws, permission.Request{Mode: permission.ModeAsk, Command: "touch x", Rules: permission.Rules{Allow: []string{"touch"}}}, ""},
		{"ask, always-allowed prefix", ws, permission.Request{Mode: permission.ModeAsk, Command: "touch x", SessionAllow: []string{"touch"}}, ""},
		{"ask, read-only and a rule", ws, permission.Request{Mode: permission.ModeAsk, Command: "cat x && touch y", Rules: permission.Rules{Allow: []string{"touch"}}}, ""},
		{"read-only mode", ws, permission.Request{Mode: permission.ModeReadOnly, Command: "cat x"}, executor.LevelReadOnly},
		{"auto mode", ws, permission.Request{Mode: permission.ModeAuto, Command: "cat x"}, ""},
		{"session off", tools.Session{Level: executor.LevelOff}, permission.Request{Mode: permission.ModeReadOnly, Command: "cat x"}, ""},
		{"no session level", tools.Session{}, permission.Request{Mode: permission.ModeAsk, Command: "cat x"}, ""},
		{"session network", tools.Session{Level: executor.LevelWorkspaceNetwork}, permission.Request{Mode: permission.ModeAsk, Command: "ls"}, executor.LevelReadOnly},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if v := permission.Judge(tc.req); v.Decision != permission.Allow {
				t.Fatalf("the judge does not allow %q: %v", tc.req.Command, v)
			}
			if got := CallLevel(tc.session, tc.req); got != tc.want {
				t.Errorf("CallLevel = %q, want %q", got, tc.want)
			}
		})
	}
}
