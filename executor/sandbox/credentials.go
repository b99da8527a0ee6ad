package sandbox

import (
	"os"
	"path/filepath"
	"strings"
)

// Credential is one entry of the hidden list: where a tool keeps a secret.
// Base is where Path starts: "~" (the home), "config" ($XDG_CONFIG_HOME,
// else ~/.config), "data" ($XDG_DATA_HOME, else ~/.local/share), or "$VAR",
// a variable naming the path itself (a colon-separated list for
// KUBECONFIG), followed wherever it points. Path is below Base ("" when
// Base names the path).
type Credential struct {
	Base, Path string
	What       string
}

// Credentials is the hidden list: paths a confined command can neither
// read nor list, at every confined level, whatever the workspace (a
// directory shows empty, a file cannot be opened). docs/security.md shows
// this table (TestDocsListCredentials keeps them in step). A variable a tool
// reads its path from is followed as well as the default place.
var Credentials = []Credential{
	{"config", "dsh-acp", "dsh-acp's own stored API key and user rule file"},
	{"~", ".ssh", "ssh keys"},
	{"~", ".aws", "AWS"},
	{"$AWS_SHARED_CREDENTIALS_FILE", "", "AWS"},
	{"$AWS_CONFIG_FILE", "", "AWS"},
	{"~", ".gnupg", "GnuPG"},
	{"$GNUPGHOME", "", "GnuPG"},
	{"config", "gh", "GitHub CLI"},
	{"$GH_CONFIG_DIR", "", "GitHub CLI"},
	{"config", "hub", "hub"},
	{"config", "github-copilot", "GitHub Copilot"},
	{"config", "gcloud", "Google Cloud SDK"},
	{"$CLOUDSDK_CONFIG", "", "Google Cloud SDK"},
	{"$GOOGLE_APPLICATION_CREDENTIALS", "", "a Google service account key"},
	{"~", ".netrc", "netrc"},
	{"$NETRC", "", "netrc"},
	{"~", ".git-credentials", "git's store helper"},
	{"config", "git/credentials", "git's store helper"},
	{"~", ".docker", "Docker"},
	{"$DOCKER_CONFIG", "", "Docker"},
	{"~", ".kube", "Kubernetes"},
	{"$KUBECONFIG", "", "Kubernetes"},
	{"~", ".npmrc", "npm"},
	{"$NPM_CONFIG_USERCONFIG", "", "npm"},
	{"~", ".pypirc", "PyPI"},
	{"~", ".cargo/credentials.toml", "Cargo"},
	{"~", ".cargo/credentials", "Cargo"},
	{"$CARGO_HOME", "credentials.toml", "Cargo"},
	{"~", ".pgpass", "PostgreSQL"},
	{"$PGPASSFILE", "", "PostgreSQL"},
	{"~", ".codex/auth.json", "Codex"},
	{"$CODEX_HOME", "auth.json", "Codex"},
	{"~", ".claude/.credentials.json", "Claude Code"},
	{"~", ".vault-token", "HashiCorp Vault"},
	{"~", ".terraform.d/credentials.tfrc.json", "Terraform"},
	{"~", ".azure", "Azure CLI"},
	{"$AZURE_CONFIG_DIR", "", "Azure CLI"},
	{"config", "op", "1Password CLI"},
	{"~", ".password-store", "pass"},
	{"$PASSWORD_STORE_DIR", "", "pass"},
	{"data", "keyrings", "GNOME keyring"},
	{"~", ".gem/credentials", "RubyGems"},
	{"~", ".m2/settings-security.xml", "Maven"},
	{"~", ".composer/auth.json", "Composer"},
	{"config", "rclone", "rclone"},
	{"~", ".s3cfg", "s3cmd"},
	{"~", ".boto", "boto"},
	{"~", ".oci", "Oracle Cloud"},
	{"~", ".bash_history", "shell history"},
	{"~", ".zsh_history", "shell history"},
	{"$HISTFILE", "", "shell history"},
	{"~", ".mysql_history", "MySQL history"},
	{"~", ".psql_history", "psql history"},
}

// String is how docs/security.md names the entry: ~/.ssh,
// $XDG_CONFIG_HOME/gh, $DOCKER_CONFIG, $CARGO_HOME/credentials.toml.
func (c Credential) String() string {
	base := map[string]string{"~": "~", "config": "$XDG_CONFIG_HOME", "data": "$XDG_DATA_HOME"}[c.Base]
	if base == "" {
		base = c.Base
	}
	if c.Path == "" {
		return base
	}
	return base + "/" + c.Path
}

// DefaultHidden is Credentials resolved for home and the daemon's
// environment (os.Getenv): absolute paths, deduplicated, in table order.
func DefaultHidden(home string) []string {
	return hiddenPaths(Credentials, home, os.Getenv)
}

// ConfigDir is dsh-acp's own config directory for home and getenv: the
// credentials file and the user's rule file live there.
func ConfigDir(home string, getenv func(string) string) string {
	return filepath.Join(configHome(home, getenv), "dsh-acp")
}

func configHome(home string, getenv func(string) string) string {
	if c := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(c) {
		return c
	}
	return filepath.Join(home, ".config")
}

// hiddenPaths resolves table for home and getenv. Entries whose base is
// unset or relative are left out; a config or data entry is hidden both
// where its variable points and at the default place.
func hiddenPaths(table []Credential, home string, getenv func(string) string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(base, rel string) {
		if !filepath.IsAbs(base) {
			return
		}
		p := filepath.Clean(filepath.Join(base, rel))
		if !seen[p] && p != "/" {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, c := range table {
		switch {
		case c.Base == "~":
			if home != "" {
				add(home, c.Path)
			}
		case c.Base == "config":
			if home != "" {
				add(filepath.Join(home, ".config"), c.Path)
			}
			if v := getenv("XDG_CONFIG_HOME"); v != "" {
				add(v, c.Path)
			}
		case c.Base == "data":
			if home != "" {
				add(filepath.Join(home, ".local", "share"), c.Path)
			}
			if v := getenv("XDG_DATA_HOME"); v != "" {
				add(v, c.Path)
			}
		case strings.HasPrefix(c.Base, "$"):
			for _, v := range filepath.SplitList(getenv(c.Base[1:])) {
				add(v, c.Path)
			}
		}
	}
	return out
}
