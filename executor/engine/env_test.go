package engine

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestScrubEnv(t *testing.T) {
	tests := []struct {
		entry string
		keep  bool
	}{
		{"PATH=/usr/local/bin:/usr/bin", true},
		{"HOME=/home/u", true},
		{"LANG=C.UTF-8", true},
		{"MONKEY=banana", false}, // contains KEY: over-matching is the price of safety
		{"OPENAI_API_KEY=x", false},
		{"aws_secret_access_key=x", false},
		{"GITHUB_TOKEN=x", false},
		{"npm_config_//registry.npmjs.org/:_authToken=x", false},
		{"PGPASSWORD=x", false},
		{"MYSQL_PASSWD=x", false},
		{"GOOGLE_APPLICATION_CREDENTIALS=/k.json", false},
		{"SSH_AUTH_SOCK=/tmp/agent", false},
		{"HTTP_COOKIE=x", false},
		{"PRIVATE_THING=x", false},
		{"SENTRY_DSN=https://x@sentry.io/1", false},
		{"sentry_dsn=x", false},
		{"DATABASE_URL=postgres://db/x", false},
		// Issue 32's names that say nothing of a secret.
		{"BW_SESSION=x", false},
		{"OP_SESSION_my=x", false},
		{"MYSQL_PWD=x", false},
		{"PGPASS=x", false},
		{"AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https", false},
		{"SLACK_WEBHOOK_URL=https://hooks.slack.com/services/T/B/x", false},
		{"PWD=/home/u", true},
		{"OLDPWD=/home/u", true},
		{"\u017fecret=x", false}, // long s folds to S
		{"\u212aEY=x", false},    // Kelvin sign folds to K
		{"PROXY=http://user:pass@proxy:3128", false},
		{"REPO=https://example.com/a:b@c", true}, // '@' after the path: no userinfo
		{"MIRROR=https://host.example/x", true},
		{"LLM=sk-abcdefghijklmnopqrstuvwxyz012345", false},
		{"GH=ghp_abcdefghijklmnopqrstuvwxyz0123456789", false},
		{"GH2=github_pat_11ABCDEFG0123456789_abcdefghijklmnop", false},
		{"GL=glpat-abcdefghij0123456789", false},
		{"SLACK=xoxb-1234567890-abcdefghijkl", false},
		{"AWS=AKIAIOSFODNN7EXAMPLE", false},
		{"G=AIzaSyA-1234567890abcdefghijklmnopqrstu", false},
		{"PEM=-----BEGIN OPENSSH PRIVATE KEY-----", false},
		{"LIST=a,sk-abcdefghijklmnopqrstuvwxyz012345", false},
		{"TOOLS=/opt/sk-tools/bin:/usr/bin", true},     // short tail: not a token
		{"DESK=desk-abcdefghijklmnopqrstuvwxyz", true}, // not at a word start
		{"NOEQUALS", false},
		{"=nameless", false},
	}
	for _, tc := range tests {
		got := ScrubEnv([]string{tc.entry}, nil, nil)
		if kept := len(got) == 1; kept != tc.keep {
			t.Errorf("%q: kept %v, want %v", tc.entry, kept, tc.keep)
		}
	}
}

func TestScrubEnvAllowAndSecrets(t *testing.T) {
	env := []string{"GH_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789", "OTHER_TOKEN=x", "ALLOWED=has-SECRETVALUE", "PLAIN=ok", "B=SECRETVALUE"}
	got := ScrubEnv(env, []string{"GH_TOKEN", "ALLOWED"}, []string{"", "SECRETVALUE"})
	want := []string{"GH_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789", "PLAIN=ok"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestMergeEnv(t *testing.T) {
	got := mergeEnv([]string{"A=1", "TERM=xterm", "B=2"}, []string{"TERM=dumb", "C=3"})
	want := []string{"A=1", "B=2", "TERM=dumb", "C=3"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// deniedNameOracle is the specification, written independently of deniedName.
var deniedNameOracle = regexp.MustCompile(`(?i)KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|PRIVATE|WEBHOOK|CONNECTION_STRING|_DSN$|_PWD$|^OP_SESSION_|^DATABASE_URL$|^SSH_AUTH_SOCK$|^BW_SESSION$|^MYSQL_PWD$|^PGPASS$`)

const fuzzSecret = "daemon-api-key-value"

// FuzzScrubEnv: no entry with a denied name, and none carrying a secret
// value, survives the scrub.
func FuzzScrubEnv(f *testing.F) {
	for _, seed := range [][2]string{
		{"PATH", "/usr/bin"},
		{"npm_config_//registry.npmjs.org/:_authToken", "x"},
		{"My_Api_Key", "v"},
		{"sentry_dsn", "v"},
		{"\u017fecret", "v"},
		{"\u212aey", "v"},
		{"X", "prefix-" + fuzzSecret},
		{"A=B", "c"},
		{"\xff\xfeTOKEN", "v"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, name, value string) {
		env := []string{name + "=" + value, "PLAIN=1"}
		for _, kv := range ScrubEnv(env, nil, []string{fuzzSecret}) {
			n, v, _ := strings.Cut(kv, "=")
			if deniedNameOracle.MatchString(n) {
				t.Errorf("denied name survived: %q", kv)
			}
			if strings.Contains(v, fuzzSecret) {
				t.Errorf("secret value survived: %q", kv)
			}
		}
	})
}
