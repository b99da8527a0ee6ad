package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestHiddenFollowsVariables: the tools' own variables are followed as
// well as the default places; relative or unset ones are left out.
func TestHiddenFollowsVariables(t *testing.T) {
	env := map[string]string{
		"DOCKER_CONFIG": "/d/docker", "GNUPGHOME": "/d/gnupg", "KUBECONFIG": "/k/a:/k/b",
		"AWS_SHARED_CREDENTIALS_FILE": "/d/aws-creds", "XDG_CONFIG_HOME": "/x", "CARGO_HOME": "/c",
		"NETRC": "relative/netrc",
	}
	got := hiddenPaths(Credentials, "/h", func(k string) string { return env[k] })
	for _, want := range []string{"/d/docker", "/d/gnupg", "/k/a", "/k/b", "/d/aws-creds", "/x/gh", "/h/.config/gh",
		"/x/dsh-acp", "/h/.config/dsh-acp", "/c/credentials.toml", "/h/.ssh", "/h/.pgpass", "/h/.codex/auth.json",
		"/h/.config/github-copilot", "/h/.vault-token", "/h/.terraform.d/credentials.tfrc.json", "/h/.azure", "/h/.bash_history",
		"/x/git/credentials", "/h/.cargo/credentials.toml"} {
		if !slices.Contains(got, want) {
			t.Errorf("%s is not hidden: %q", want, got)
		}
	}
	for _, p := range got {
		if !filepath.IsAbs(p) || strings.Contains(p, "relative") {
			t.Errorf("hidden path %q", p)
		}
	}
}

// TestDocsListCredentials: docs/security.md shows every entry of the
// hidden list and of the protected set.
func TestDocsListCredentials(t *testing.T) {
	b, err := os.ReadFile("../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, c := range Credentials {
		if !strings.Contains(doc, "`"+c.String()+"`") {
			t.Errorf("docs/security.md does not list the hidden %s (%s)", c, c.What)
		}
	}
	for _, names := range [][]string{DefaultProtected, HomeProtected} {
		for _, n := range names {
			if !strings.Contains(doc, "`"+n+"`") {
				t.Errorf("docs/security.md does not list the protected %s", n)
			}
		}
	}
	for _, n := range gitProtected {
		if !strings.Contains(doc, "`"+n.name+"`") {
			t.Errorf("docs/security.md does not list the protected .git/%s", n.name)
		}
	}
}
