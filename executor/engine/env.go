package engine

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// deniedNameParts are matched case-insensitively anywhere in a variable name.
// WEBHOOK (a Slack or Discord webhook URL is its own credential) and
// CONNECTION_STRING (Azure's, which embed an account key) joined them in
// issue 32.
var deniedNameParts = []string{
	"KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE", "PRIVATE",
	"WEBHOOK", "CONNECTION_STRING",
}

// deniedNames are names dropped exactly: session keys and passwords whose
// names say nothing of what they hold (Bitwarden's BW_SESSION, MySQL's
// MYSQL_PWD, libpq's PGPASS, ssh's agent socket, a database URL).
var deniedNames = []string{"DATABASE_URL", "SSH_AUTH_SOCK", "BW_SESSION", "MYSQL_PWD", "PGPASS"}

// deniedNamePrefixes are name prefixes dropped: 1Password's OP_SESSION_<account>.
var deniedNamePrefixes = []string{"OP_SESSION_"}

// tokenPrefixes mark values that look like API keys or tokens. A '?' matches
// any one byte. A prefix counts only at the start of a word and when at least
// minTokenTail token characters follow it, so paths such as /opt/sk-tools
// survive.
var tokenPrefixes = []string{"sk-", "ghp_", "github_pat_", "glpat-", "xox?-", "AKIA", "AIza"}

const minTokenTail = 16

// nonInteractiveEnv is set on every command (after the scrub, before
// Spec.Env): pagers, prompts and colours off, and a marker naming the agent.
var nonInteractiveEnv = []string{
	"PAGER=cat",
	"GIT_PAGER=cat",
	"GH_PAGER=cat",
	"GIT_TERMINAL_PROMPT=0",
	"GIT_EDITOR=true",
	"NO_COLOR=1",
	"TERM=dumb",
	"CI=1",
	"DEBIAN_FRONTEND=noninteractive",
	"DSH_ACP=1",
}

// ScrubEnv returns the entries of env ("NAME=value") that may be passed to a
// command. It is pure and keeps the order of env.
//
// An entry is dropped when:
//   - it is malformed (no '=' or an empty name);
//   - its value contains any non-empty string in secrets (even if allowed);
//   - its name is not in allow (exact match) and either the name contains
//     KEY, SECRET, TOKEN, PASSWORD, PASSWD, CREDENTIAL, AUTH, COOKIE or
//     PRIVATE, WEBHOOK or CONNECTION_STRING (case-insensitive substring, any
//     characters including '/'), ends in _DSN or _PWD, starts with
//     OP_SESSION_, or is DATABASE_URL, SSH_AUTH_SOCK, BW_SESSION, MYSQL_PWD
//     or PGPASS; or the value carries
//     a credential (URL userinfo "://user:pass@", a PEM block "-----BEGIN",
//     or a token prefix sk-, ghp_, github_pat_, glpat-, xox?-, AKIA, AIza
//     followed by a long token).
func ScrubEnv(env []string, allow []string, secrets []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" || containsAny(value, secrets) {
			continue
		}
		if !slices.Contains(allow, name) && (deniedName(name) || deniedValue(value)) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if sub != "" && strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// deniedName reports whether a variable name looks like it holds a secret.
func deniedName(name string) bool {
	f := foldName(name)
	for _, part := range deniedNameParts {
		if strings.Contains(f, part) {
			return true
		}
	}
	for _, p := range deniedNamePrefixes {
		if strings.HasPrefix(f, p) {
			return true
		}
	}
	return strings.HasSuffix(f, "_DSN") || strings.HasSuffix(f, "_PWD") || slices.Contains(deniedNames, f)
}

// foldName upper-cases ASCII letters and maps every rune whose Unicode case
// folding reaches an ASCII letter (the Kelvin sign, the long s) to that
// letter, so the match is at least as wide as a (?i) regexp's.
func foldName(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		b.WriteRune(foldRune(r))
	}
	return b.String()
}

func foldRune(r rune) rune {
	if r < 0x80 {
		return unicode.ToUpper(r)
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < 0x80 {
			return unicode.ToUpper(f)
		}
	}
	return r
}

// deniedValue reports whether a value carries a credential.
func deniedValue(v string) bool {
	if strings.Contains(v, "-----BEGIN") || hasURLUserinfo(v) {
		return true
	}
	for _, p := range tokenPrefixes {
		if hasTokenPrefix(v, p) {
			return true
		}
	}
	return false
}

// hasURLUserinfo reports whether v contains "scheme://user:pass@host".
func hasURLUserinfo(v string) bool {
	for rest := v; ; {
		i := strings.Index(rest, "://")
		if i < 0 {
			return false
		}
		rest = rest[i+3:]
		authority := rest
		if end := strings.IndexAny(authority, "/?# \t\n\r"); end >= 0 {
			authority = authority[:end]
		}
		if at := strings.LastIndexByte(authority, '@'); at >= 0 && strings.IndexByte(authority[:at], ':') >= 0 {
			return true
		}
	}
}

// hasTokenPrefix reports whether prefix p ('?' matching any byte) occurs in v
// at a word start and is followed by at least minTokenTail token bytes.
func hasTokenPrefix(v, p string) bool {
	for i := 0; i+len(p) <= len(v); i++ {
		if i > 0 && isAlnum(v[i-1]) {
			continue
		}
		if !matchPrefix(v[i:], p) {
			continue
		}
		tail := 0
		for j := i + len(p); j < len(v) && isTokenByte(v[j]); j++ {
			tail++
		}
		if tail >= minTokenTail {
			return true
		}
	}
	return false
}

func matchPrefix(s, p string) bool {
	for k := 0; k < len(p); k++ {
		if p[k] != '?' && s[k] != p[k] {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isTokenByte(c byte) bool { return isAlnum(c) || c == '_' || c == '-' }

// mergeEnv returns base with each "NAME=value" in overrides replacing any
// entry of the same name. base is not modified.
func mergeEnv(base []string, overrides []string) []string {
	names := make(map[string]bool, len(overrides))
	for _, kv := range overrides {
		name, _, _ := strings.Cut(kv, "=")
		names[name] = true
	}
	out := make([]string, 0, len(base)+len(overrides))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if !names[name] {
			out = append(out, kv)
		}
	}
	return append(out, overrides...)
}

// specEnv turns Spec.Env into sorted "NAME=value" entries, rejecting names a
// process environment cannot carry.
func specEnv(env map[string]string) ([]string, error) {
	out := make([]string, 0, len(env))
	for name, value := range env {
		if name == "" || strings.ContainsAny(name, "=\x00") || strings.ContainsRune(value, 0) {
			return nil, fmt.Errorf("invalid environment variable %q", name)
		}
		out = append(out, name+"="+value)
	}
	slices.Sort(out)
	return out, nil
}
