package permission

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeProject(t *testing.T, cwd, content string) string {
	t.Helper()
	p := ProjectRulesPath(cwd)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func decideWith(t *testing.T, l Loaded, cmd string) Decision {
	t.Helper()
	return Judge(Request{Mode: ModeAsk, Rules: l.Rules, Command: cmd}).Decision
}

// TestProjectRulesNeedTrust is the trust flow: an unapproved allow rule
// still asks, approving the content makes it apply, and an edit makes
// the file untrusted again.
func TestProjectRulesNeedTrust(t *testing.T) {
	cwd, state := t.TempDir(), filepath.Join(t.TempDir(), "trust")
	store := NewTrustStore(state)
	path := writeProject(t, cwd, `{"allow": ["npm run build"], "deny": ["curl"]}`)

	l, err := LoadTrustedRules("", path, store)
	if err != nil {
		t.Fatal(err)
	}
	if !l.NeedsApproval() || l.Project.Trusted {
		t.Fatalf("an unapproved file with allow rules must need approval: %+v", l.Project)
	}
	if got := decideWith(t, l, "npm run build"); got != Ask {
		t.Errorf("unapproved allow rule: %v, want ask", got)
	}
	if got := decideWith(t, l, "curl -s x"); got != Deny {
		t.Errorf("the deny rules of an untrusted file apply: %v, want deny", got)
	}
	if v := Judge(Request{Mode: ModeAsk, Rules: l.IfTrusted(), Command: "npm run build"}); v.Decision != Allow {
		t.Errorf("IfTrusted: %v, want allow", v)
	}
	for _, want := range []string{path, "npm run build", "curl"} {
		if !strings.Contains(l.Project.Summary, want) {
			t.Errorf("summary %q lacks %q", l.Project.Summary, want)
		}
	}

	if err := store.Approve(l.Project.Path, l.Project.Hash); err != nil {
		t.Fatal(err)
	}
	l, err = LoadTrustedRules("", path, store)
	if err != nil {
		t.Fatal(err)
	}
	if l.NeedsApproval() || decideWith(t, l, "npm run build") != Allow {
		t.Errorf("after approval: needs approval %v, decision %v; want the rule to apply", l.NeedsApproval(), decideWith(t, l, "npm run build"))
	}

	writeProject(t, cwd, `{"allow": ["npm run build", "rm"], "deny": ["curl"]}`)
	l, err = LoadTrustedRules("", path, store)
	if err != nil {
		t.Fatal(err)
	}
	if !l.NeedsApproval() || decideWith(t, l, "npm run build") != Ask || decideWith(t, l, "rm x") != Ask {
		t.Errorf("an edited file must be untrusted again: %+v", l.Project)
	}

	fi, err := os.Stat(state)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("store directory mode %v (%v), want 0700", fi.Mode().Perm(), err)
	}
	entries, _ := os.ReadDir(state)
	if len(entries) != 1 {
		t.Fatalf("store holds %d records, want 1", len(entries))
	}
	if fi, _ := os.Stat(filepath.Join(state, entries[0].Name())); fi.Mode().Perm() != 0o600 {
		t.Errorf("record mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestTrustIsPerFileAndStoreMustBePrivate(t *testing.T) {
	a, b, state := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "trust")
	store := NewTrustStore(state)
	content := `{"allow": ["make test"]}`
	pa, pb := writeProject(t, a, content), writeProject(t, b, content)
	la, _ := LoadTrustedRules("", pa, store)
	if err := store.Approve(la.Project.Path, la.Project.Hash); err != nil {
		t.Fatal(err)
	}
	if lb, _ := LoadTrustedRules("", pb, store); !lb.NeedsApproval() {
		t.Error("approving one project's file must not trust the same content in another project")
	}
	if err := os.Chmod(state, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTrustedRules("", pa, store); !errors.Is(err, ErrTrustStore) {
		t.Errorf("a store others can write to: %v, want ErrTrustStore", err)
	}
	if l, err := LoadTrustedRules("", pa, nil); err != nil || !l.NeedsApproval() {
		t.Errorf("a nil store trusts nothing: %v %+v", err, l.Project)
	}
}

func TestTrustNotNeededWithoutAllowRules(t *testing.T) {
	cwd := t.TempDir()
	path := writeProject(t, cwd, `{"deny": ["rm -rf"]}`)
	l, err := LoadTrustedRules("", path, NewTrustStore(t.TempDir()))
	if err != nil || l.NeedsApproval() || decideWith(t, l, "rm -rf x") != Deny {
		t.Errorf("deny-only file: %v %+v", err, l.Project)
	}
	if l, err := LoadTrustedRules("", filepath.Join(cwd, "missing.json"), nil); err != nil || l.Project != nil {
		t.Errorf("missing file: %v %+v", err, l.Project)
	}
}

func TestSaveProjectAllowKeepsTrust(t *testing.T) {
	cwd, state := t.TempDir(), t.TempDir()
	store := NewTrustStore(filepath.Join(state, "trust"))
	if err := store.SaveProjectAllow(cwd, "go test"); err != nil {
		t.Fatal(err)
	}
	path := ProjectRulesPath(cwd)
	l, err := LoadTrustedRules("", path, store)
	if err != nil || l.NeedsApproval() || decideWith(t, l, "go test ./...") != Allow {
		t.Fatalf("a rule the user saved must apply: %v %+v", err, l.Project)
	}
	if err := store.SaveProjectAllow(cwd, "make lint"); err != nil {
		t.Fatal(err)
	}
	if l, _ := LoadTrustedRules("", path, store); l.NeedsApproval() {
		t.Error("saving to a trusted file must keep it trusted")
	}
	writeProject(t, cwd, `{"allow": ["go test", "curl"]}`) // someone else edits it
	if err := store.SaveProjectAllow(cwd, "make lint"); err != nil {
		t.Fatal(err)
	}
	if l, _ := LoadTrustedRules("", path, store); !l.NeedsApproval() {
		t.Error("saving to an untrusted file must not trust what someone else added")
	}
}
