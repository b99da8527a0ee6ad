package mcp

import (
	"regexp"
	"strings"
	"testing"
)

var allowed = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestNames(t *testing.T) {
	long := strings.Repeat("x", 80)
	for _, tc := range []struct {
		server, tool, want string
	}{
		{"github", "list_issues", "mcp__github__list_issues"},
		{"my server", "do.it", "mcp__my_server__do_it"},
		{"café", "naïve/tool", "mcp__caf___na_ve_tool"},
		{"", "", "mcp______"},
	} {
		if got := newNamer().name(tc.server, tc.tool); got != tc.want {
			t.Errorf("name(%q, %q) = %q, want %q", tc.server, tc.tool, got, tc.want)
		}
	}
	// Collisions and overlong names get a hash of the real names, stable
	// and within the providers' charset.
	n := newNamer()
	a, b, c := n.name("s", "a.b"), n.name("s", "a_b"), n.name("s", long)
	if a != "mcp__s__a_b" || b == a || !strings.HasPrefix(b, "mcp__s__a_b_") {
		t.Errorf("collision: %q then %q", a, b)
	}
	for _, name := range []string{a, b, c} {
		if !allowed.MatchString(name) {
			t.Errorf("%q is outside the providers' charset", name)
		}
	}
	if again := newNamer(); again.name("s", "a.b") != a || again.name("s", "a_b") != b || again.name("s", long) != c {
		t.Error("names are not deterministic")
	}
	// Even a hash collision is resolved.
	n2 := newNamer()
	first := n2.name("s", long)
	n2.taken[first] = true
	if second := n2.name("s", long); second == first || !allowed.MatchString(second) {
		t.Errorf("same tool twice: %q, %q", first, second)
	}
}

func TestSplitName(t *testing.T) {
	for _, tc := range []struct {
		name, server, tool string
		ok                 bool
	}{
		{"mcp__github__list_issues", "github", "list_issues", true},
		{"mcp__a__b__c", "a", "b__c", true},
		{"mcp__only", "", "", false},
		{"bash", "", "", false},
		{"mcp____x", "", "", false},
	} {
		s, tl, ok := splitName(tc.name)
		if s != tc.server || tl != tc.tool || ok != tc.ok {
			t.Errorf("splitName(%q) = %q %q %v", tc.name, s, tl, ok)
		}
	}
}
