package permission

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestUserRulesPath(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"XDG_CONFIG_HOME": "/x/cfg", "HOME": "/home/u"}, "/x/cfg/dsh-acp/permissions.json"},
		{map[string]string{"XDG_CONFIG_HOME": "relative", "HOME": "/home/u"}, "/home/u/.config/dsh-acp/permissions.json"},
		{map[string]string{"HOME": "/home/u"}, "/home/u/.config/dsh-acp/permissions.json"},
	}
	for _, c := range cases {
		if got, err := UserRulesPath(env(c.env)); err != nil || got != c.want {
			t.Errorf("UserRulesPath(%v) = %q, %v; want %q", c.env, got, err, c.want)
		}
	}
	if _, err := UserRulesPath(env(nil)); err == nil {
		t.Error("UserRulesPath without HOME succeeded")
	}
	if got := ProjectRulesPath("/p"); got != "/p/.dsh-acp/permissions.json" {
		t.Errorf("ProjectRulesPath = %q", got)
	}
}

func TestLoadRulesMergesAndNormalizes(t *testing.T) {
	dir := t.TempDir()
	user := filepath.Join(dir, "user.json")
	project := ProjectRulesPath(filepath.Join(dir, "proj"))
	writeFile(t, user, `{"$schema": "x", "allow": ["git  status", "go test"], "deny": ["rm -rf"]}`)
	writeFile(t, project, `{"allow": ["go test", "npm run build"], "deny": ["git push --force", "rm -rf"]}`)
	got, err := LoadRules(user, project)
	if err != nil {
		t.Fatal(err)
	}
	want := Rules{Allow: []string{"git status", "go test", "npm run build"}, Deny: []string{"rm -rf", "git push --force"}}
	if !slices.Equal(got.Allow, want.Allow) || !slices.Equal(got.Deny, want.Deny) {
		t.Errorf("LoadRules = %+v, want %+v", got, want)
	}
}

func TestLoadRulesMissingAndEmptyFilesAreFine(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.json")
	writeFile(t, empty, " \n")
	got, err := LoadRules(filepath.Join(dir, "missing.json"), empty)
	if err != nil || len(got.Allow)+len(got.Deny) != 0 {
		t.Errorf("LoadRules = %+v, %v; want empty rules", got, err)
	}
	if got, err := LoadRules("", ""); err != nil || len(got.Allow)+len(got.Deny) != 0 {
		t.Errorf("LoadRules with no paths = %+v, %v", got, err)
	}
}

func TestLoadRulesReportsFileAndPosition(t *testing.T) {
	cases := []struct {
		content string
		want    []string
	}{
		{"{\n  \"allow\": [\"ls\",]\n}", []string{":2:", "invalid character"}},
		{"{\n  \"allow\": [\"ls\"],\n  \"denny\": [\"rm\"]\n}", []string{":3:3:", "unknown field", `"denny"`}},
		{"{\"allow\": \"ls\"}", []string{":1:", "cannot unmarshal"}},
		{"{\n\"deny\": [\"rm -rf\", \"ls && rm\"]}", []string{":2:", "deny[1]", "invalid permission rule"}},
		{"{} {}", []string{"unexpected data"}},
		{"[1", []string{"unexpected EOF"}},
	}
	for _, c := range cases {
		path := filepath.Join(t.TempDir(), "p.json")
		writeFile(t, path, c.content)
		_, err := LoadRules("", path)
		if err == nil {
			t.Errorf("%q: no error", c.content)
			continue
		}
		for _, w := range append(c.want, path) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q lacks %q", c.content, err, w)
			}
		}
	}
	path := filepath.Join(t.TempDir(), "bad.json")
	writeFile(t, path, `{"deny": [""]}`)
	if _, err := LoadRules("", path); !errors.Is(err, ErrInvalidRule) {
		t.Errorf("an empty rule: %v, want ErrInvalidRule", err)
	}
}

func TestSaveProjectAllowCreatesAndKeepsContent(t *testing.T) {
	cwd := t.TempDir()
	if err := SaveProjectAllow(cwd, "npm run build"); err != nil {
		t.Fatal(err)
	}
	path := ProjectRulesPath(cwd)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", info.Mode().Perm())
	}
	writeFile(t, path, `{"$schema": "s", "deny": ["rm -rf"], "allow": ["go test"]}`)
	for _, p := range []string{"git  push", "git push", "npm run build"} {
		if err := SaveProjectAllow(cwd, p); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if got["$schema"] != "s" || len(got["deny"].([]any)) != 1 {
		t.Errorf("other content not kept: %s", data)
	}
	rules, err := LoadRules("", path)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"go test", "git push", "npm run build"}; !slices.Equal(rules.Allow, want) {
		t.Errorf("allow = %q, want %q", rules.Allow, want)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestSaveProjectAllowRefusesBroadOrInvalidPrefixes(t *testing.T) {
	cwd := t.TempDir()
	for _, p := range []string{"rm", "", "ls && rm", "$X y"} {
		if err := SaveProjectAllow(cwd, p); !errors.Is(err, ErrInvalidRule) {
			t.Errorf("SaveProjectAllow(%q) = %v, want ErrInvalidRule", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(cwd, ".dsh-acp")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused prefix created files: %v", err)
	}
}

func TestSaveProjectAllowLeavesMalformedFileAlone(t *testing.T) {
	cwd := t.TempDir()
	path := ProjectRulesPath(cwd)
	const broken = `{"allow": [`
	writeFile(t, path, broken)
	if err := SaveProjectAllow(cwd, "go test"); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("SaveProjectAllow on a broken file = %v, want an error naming it", err)
	}
	if data, _ := os.ReadFile(path); string(data) != broken {
		t.Errorf("the broken file was changed to %q", data)
	}
}

func TestSaveProjectAllowConcurrentWritesStayValid(t *testing.T) {
	cwd := t.TempDir()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if err := SaveProjectAllow(cwd, "make target"+string(rune('a'+i))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	rules, err := LoadRules("", ProjectRulesPath(cwd))
	if err != nil {
		t.Fatalf("the file is not valid after concurrent saves: %v", err)
	}
	if len(rules.Allow) == 0 {
		t.Error("no rule saved")
	}
}
