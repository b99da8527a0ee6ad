package mcp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	user := filepath.Join(dir, "user", "mcp.json")
	os.MkdirAll(filepath.Dir(user), 0o755)
	os.WriteFile(user, []byte(`{"allow":[{"server":"docs","readOnlyTools":true}]}`), 0o644)
	cwd := t.TempDir()
	if err := SaveProjectRule(cwd, Rule{Server: "gh", Tool: "create"}); err != nil {
		t.Fatal(err)
	}
	if err := SaveProjectRule(cwd, Rule{Server: "gh", Tool: "create"}); err != nil {
		t.Fatal(err)
	}
	rs, err := LoadRules(user, ProjectRulesPath(cwd))
	if err != nil || len(rs) != 2 || rs[0].Server != "docs" || rs[1] != (Rule{Server: "gh", Tool: "create"}) {
		t.Fatalf("rules %+v, %v", rs, err)
	}
	if fi, _ := os.Stat(ProjectRulesPath(cwd)); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}
	if err := SaveProjectRule(cwd, Rule{Server: "gh"}); err == nil {
		t.Error("saved a rule naming nothing")
	}
	for _, bad := range []string{`{"allow":[{"server":"x"}]}`, `{"alow":[]}`, `{"allow":[{"server":"x","tool":"t","readOnlyTools":true}]}`, `{`, `{}{}`} {
		os.WriteFile(user, []byte(bad), 0o644)
		if _, err := LoadRules(user, ""); err == nil || !strings.Contains(err.Error(), user) {
			t.Errorf("%s: %v", bad, err)
		}
		if err := SaveProjectRule(filepath.Dir(filepath.Dir(user)), Rule{Server: "a", Tool: "b"}); err != nil && !strings.Contains(err.Error(), "mcp allowances") {
			t.Errorf("save beside a bad file: %v", err)
		}
	}
	if rs, err := LoadRules("", filepath.Join(dir, "missing.json")); err != nil || len(rs) != 0 {
		t.Errorf("missing: %v %v", rs, err)
	}
	if UserRulesPath("") != "" || UserRulesPath("/h/.config/dsh-acp/permissions.json") != "/h/.config/dsh-acp/mcp.json" {
		t.Error("UserRulesPath")
	}
}
