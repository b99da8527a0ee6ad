package mcp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/permission"
)

func TestRulesAllow(t *testing.T) {
	rs := Rules{{Server: "gh", Tool: "create"}, {Server: "docs", ReadOnlyTools: true}}
	for _, tc := range []struct {
		server, tool string
		readOnly     bool
		want         bool
	}{
		{"gh", "create", false, true},
		{"gh", "delete", false, false},
		{"gh", "list", true, false},
		{"docs", "search", true, true},
		{"docs", "write", false, false},
		{"other", "create", false, false},
		{"gh", "", false, false},
	} {
		if got := rs.Allows(tc.server, tc.tool, tc.readOnly); got != tc.want {
			t.Errorf("Allows(%q, %q, %v) = %v", tc.server, tc.tool, tc.readOnly, got)
		}
	}
}

func TestLoadAndSaveRules(t *testing.T) {
	dir := t.TempDir()
	store := permission.NewTrustStore(filepath.Join(dir, "trust"))
	user := filepath.Join(dir, "user", "mcp.json")
	os.MkdirAll(filepath.Dir(user), 0o755)
	os.WriteFile(user, []byte(`{"allow":[{"server":"docs","readOnlyTools":true}]}`), 0o644)
	cwd := t.TempDir()
	// The user's own always-allow creates the file and keeps it trusted.
	if err := SaveProjectRule(cwd, Rule{Server: "gh", Tool: "create"}, store); err != nil {
		t.Fatal(err)
	}
	if err := SaveProjectRule(cwd, Rule{Server: "gh", Tool: "create"}, store); err != nil {
		t.Fatal(err)
	}
	l, err := LoadRules(user, ProjectRulesPath(cwd), store)
	if err != nil || len(l.Rules) != 2 || l.Rules[0].Server != "docs" || l.Rules[1] != (Rule{Server: "gh", Tool: "create"}) || len(l.Untrusted) != 0 {
		t.Fatalf("loaded %+v, %v", l, err)
	}
	if fi, _ := os.Stat(ProjectRulesPath(cwd)); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}
	// Edited behind the user's back (or cloned): not in force until approved.
	os.WriteFile(ProjectRulesPath(cwd), []byte(`{"allow":[{"server":"gh","tool":"delete_repo"}]}`), 0o644)
	l, err = LoadRules(user, ProjectRulesPath(cwd), store)
	if err != nil || len(l.Rules) != 1 || len(l.Untrusted) != 1 || l.Summary() != "gh: delete_repo" || l.Hash == "" {
		t.Fatalf("untrusted file loaded as %+v, %v", l, err)
	}
	// Saving beside an untrusted file does not trust it.
	if err := SaveProjectRule(cwd, Rule{Server: "gh", ReadOnlyTools: true}, store); err != nil {
		t.Fatal(err)
	}
	if l, _ = LoadRules("", ProjectRulesPath(cwd), store); len(l.Rules) != 0 || len(l.Untrusted) != 2 {
		t.Errorf("after a save beside an untrusted file: %+v", l)
	}
	if err := store.Approve(l.ProjectPath, l.Hash); err != nil {
		t.Fatal(err)
	}
	if l, _ = LoadRules("", ProjectRulesPath(cwd), store); len(l.Rules) != 2 || len(l.Untrusted) != 0 {
		t.Errorf("after approval: %+v", l)
	}
	if l, _ = LoadRules("", ProjectRulesPath(cwd), nil); len(l.Rules) != 0 || len(l.Untrusted) != 2 {
		t.Errorf("a nil store trusted the file: %+v", l)
	}
	if err := SaveProjectRule(cwd, Rule{Server: "gh"}, store); err == nil {
		t.Error("saved a rule naming nothing")
	}
	for _, bad := range []string{`{"allow":[{"server":"x"}]}`, `{"alow":[]}`, `{"allow":[{"server":"x","tool":"t","readOnlyTools":true}]}`, `{`, `{}{}`} {
		os.WriteFile(user, []byte(bad), 0o644)
		if _, err := LoadRules(user, "", store); err == nil || !strings.Contains(err.Error(), user) {
			t.Errorf("%s: %v", bad, err)
		}
		if err := SaveProjectRule(filepath.Dir(filepath.Dir(user)), Rule{Server: "a", Tool: "b"}, store); err != nil && !strings.Contains(err.Error(), "mcp allowances") {
			t.Errorf("save beside a bad file: %v", err)
		}
	}
	if l, err := LoadRules("", filepath.Join(dir, "missing.json"), store); err != nil || len(l.Rules)+len(l.Untrusted) != 0 {
		t.Errorf("missing: %+v %v", l, err)
	}
	if UserRulesPath("") != "" || UserRulesPath("/h/.config/dsh-acp/permissions.json") != "/h/.config/dsh-acp/mcp.json" {
		t.Error("UserRulesPath")
	}
}
