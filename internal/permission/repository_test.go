package permission

import "testing"

// TestGitInitAsks: creating a repository asks first in auto mode, is marked
// in every mode, and other git commands are not affected.
func TestGitInitAsks(t *testing.T) {
	for _, tc := range []struct {
		cmd     string
		mode    Mode
		want    Decision
		creates bool
	}{
		{"git init", ModeAuto, Ask, true},
		{"git -C sub init -q", ModeAuto, Ask, true},
		{"cd x && git init", ModeAuto, Ask, true},
		{"git $sub", ModeAuto, Ask, true},
		{"git init", ModeAsk, Ask, true},
		{"git init", ModeReadOnly, Deny, false},
		{"git commit -m x", ModeAuto, Allow, false},
		{"git -c core.pager=x log", ModeAuto, Allow, false},
		{"git -c x=y init", ModeAuto, Ask, true},
		{"git status", ModeAsk, Allow, false},
		{"echo git init", ModeAuto, Allow, false},
	} {
		v := Judge(Request{Command: tc.cmd, Mode: tc.mode})
		if v.Decision != tc.want || (tc.mode != ModeReadOnly && v.CreatesRepository != tc.creates) {
			t.Errorf("%s in %s: %v (creates %v), want %v (creates %v)", tc.cmd, tc.mode, v, v.CreatesRepository, tc.want, tc.creates)
		}
	}
}
