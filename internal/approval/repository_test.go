package approval

import (
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/permission"
	"github.com/dsh-acp/dsh-acp/tools"
)

// A `git init` asks first in every mode; only the user's Allow lets the
// sandbox make the repository (Approval.NewRepository), and no other
// command ever gets that.
func TestNewRepositoryOnlyWhenTheUserAllowsGitInit(t *testing.T) {
	for _, tt := range []struct {
		command, answer string
		mode            permission.Mode
		want            bool
	}{
		{"git init", AllowOnce, permission.ModeAuto, true},
		{"git init", AllowOnce, permission.ModeAsk, true},
		{"git init", Reject, permission.ModeAuto, false},
		{"touch x", AllowOnce, permission.ModeAsk, false},
		{"ls", AllowOnce, permission.ModeAuto, false},
	} {
		n := needs{"bash": {Kind: tools.NeedCommand, Subject: tt.command}}
		p := New(Config{Cwd: t.TempDir(), Trust: permission.NewTrustStore(""), Tools: n, Journal: journal{}, Ask: &asker{answer: tt.answer}, Mode: tt.mode})
		a := decide(p, "bash")
		if a.NewRepository != tt.want || a.NewRepository && a.Verdict != agent.Allow {
			t.Errorf("%q answered %s in %s: NewRepository %v (verdict %v), want %v", tt.command, tt.answer, tt.mode, a.NewRepository, a.Verdict, tt.want)
		}
	}
}
