package approval

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/mcp"
	"github.com/dsh-acp/dsh-acp/internal/permission"
	"github.com/dsh-acp/dsh-acp/tools"
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

// Every question the policy can put offers at most one option of each ACP
// kind, and one allow_once and one reject_once always: a command with and
// without a safe prefix, with a project rule file the user has not trusted
// that would run it, an MCP tool (one tool, a read-only one), with an
// untrusted project allowance file that would run it, and a call that is
// neither (a write). The project files' trust offer takes the allow_always
// slot.
func TestEveryQuestionOffersOneOptionPerKind(t *testing.T) {
	plain, untrusted := t.TempDir(), t.TempDir()
	writeFile(t, permission.ProjectRulesPath(untrusted), `{"allow": ["touch x"]}`)
	writeFile(t, mcp.ProjectRulesPath(untrusted), `{"allow": [{"server": "s", "tool": "edit"}, {"server": "s", "readOnlyTools": true}]}`)
	n := needs{
		"prefixed": {Kind: tools.NeedCommand, Subject: "touch x"},
		"nofix":    {Kind: tools.NeedCommand, Subject: "sh -c 'echo hi > f'"},
		"mcp_edit": {Kind: tools.NeedTool, Subject: "mcp__s__edit", Server: "s", Tool: "edit"},
		"mcp_read": {Kind: tools.NeedTool, Subject: "mcp__s__read", Server: "s", Tool: "read", ReadOnly: true},
		"write":    {Kind: tools.NeedWrite, Subject: "/tmp/x"},
	}
	seen := map[string]bool{} // what the walk covered
	for _, cwd := range []string{plain, untrusted} {
		for name := range n {
			ask := &asker{answer: Reject}
			p := New(Config{Cwd: cwd, Trust: permission.NewTrustStore(filepath.Join(t.TempDir(), "trust.json")), Tools: n, Journal: journal{}, Ask: ask, Mode: permission.ModeAsk})
			decide(p, name)
			if len(ask.asked) != 1 {
				t.Fatalf("%s in %s: %d questions, want 1", name, cwd, len(ask.asked))
			}
			kinds := map[string]int{}
			for _, o := range ask.asked[0] {
				kinds[o.Kind]++
			}
			for kind, k := range kinds {
				if k > 1 {
					t.Errorf("%s (project file: %v): %d options of kind %s: %+v", name, cwd == untrusted, k, kind, ask.asked[0])
				}
			}
			if kinds[KindAllowOnce] != 1 || kinds[KindRejectOnce] != 1 {
				t.Errorf("%s: options %+v, want allow_once and reject_once", name, ask.asked[0])
			}
			trust := slices.ContainsFunc(ask.asked[0], func(o Option) bool { return o.ID == TrustProject })
			if wantTrust := cwd == untrusted && name != "write" && name != "nofix"; trust != wantTrust {
				t.Errorf("%s (project file: %v): trust offered %v", name, cwd == untrusted, trust)
			}
			seen[name+map[bool]string{true: "+trust", false: ""}[trust]] = kinds[KindAllowAlways] == 1
		}
	}
	// The walk met questions with and without an allow_always.
	if !seen["prefixed"] || seen["nofix"] || !seen["mcp_edit"] || !seen["mcp_read"] || seen["write"] || !seen["prefixed+trust"] || !seen["mcp_edit+trust"] {
		t.Errorf("allow_always offered per question: %v", seen)
	}
}

// An answer the question did not offer — the project scope id older
// questions had, or allow_always where only the trust is offered — runs
// nothing.
func TestAnUnofferedAnswerIsARejection(t *testing.T) {
	n := needs{"write": {Kind: tools.NeedWrite, Subject: "/tmp/x"}}
	for _, answer := range []string{"allow_always_project", AllowSession, "bogus"} {
		p := New(Config{Cwd: t.TempDir(), Trust: permission.NewTrustStore(""), Tools: n, Journal: journal{}, Ask: &asker{answer: answer}, Mode: permission.ModeAsk})
		if a := decide(p, "write"); a.Verdict != agent.Deny || a.UserReason != DeclinedByUser {
			t.Errorf("answer %q: %+v, want declined", answer, a)
		}
	}
}

// /allow-project's rule is saved into the project's file, which stays
// trusted, so a new session of the project runs the call unasked; the
// session that saved it runs it unasked too (journaled). A program alone,
// an empty rule and an mcp: rule without a tool are refused, nothing
// written.
func TestAllowProjectSavesTheRuleForTheProject(t *testing.T) {
	cwd := t.TempDir()
	trust := permission.NewTrustStore(filepath.Join(t.TempDir(), "trust.json"))
	n := needs{
		"bash":         {Kind: tools.NeedCommand, Subject: "touch x"},
		"mcp__s__edit": {Kind: tools.NeedTool, Subject: "mcp__s__edit", Server: "s", Tool: "edit"},
	}
	newPolicy := func(j journal, ask *asker) *Policy {
		return New(Config{Cwd: cwd, Trust: trust, Tools: n, Journal: j, Ask: ask, Mode: permission.ModeAsk})
	}
	j := journal{}
	p := newPolicy(j, &asker{answer: Reject})
	for _, bad := range []string{"", "  ", "touch", "mcp:s", "mcp:s/"} {
		if _, _, err := p.AllowProject(bad); err == nil {
			t.Errorf("AllowProject(%q) accepted", bad)
		}
	}
	if _, err := os.Stat(filepath.Join(cwd, ".dsh-acp")); err == nil {
		t.Fatal("a refused rule wrote into the project")
	}
	for _, tc := range []struct{ rule, saved, file, want string }{
		{"touch   x", "touch x", permission.ProjectRulesPath(cwd), `"touch x"`},
		{"mcp:s/edit", "mcp:s/edit", mcp.ProjectRulesPath(cwd), `"tool": "edit"`},
	} {
		saved, path, err := p.AllowProject(tc.rule)
		if err != nil || saved != tc.saved || path != tc.file {
			t.Fatalf("AllowProject(%q) = %q, %q, %v", tc.rule, saved, path, err)
		}
		if b, err := os.ReadFile(tc.file); err != nil || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s holds %q (%v), want %s", tc.file, b, err, tc.want)
		}
	}
	if len(j) != 2 {
		t.Errorf("journal %v, want both allowances remembered for the session", j)
	}
	for _, name := range []string{"bash", "mcp__s__edit"} {
		ask := &asker{answer: Reject}
		if a := decide(newPolicy(journal{}, ask), name); a.Verdict != agent.Allow || len(ask.asked) != 0 {
			t.Errorf("%s in a new session of the project: %+v after %d questions, want allowed unasked", name, a, len(ask.asked))
		}
	}
}

// The read-only-tools rule reads and writes as the option's hint shows.
func TestToolRuleRoundTrip(t *testing.T) {
	for _, r := range []mcp.Rule{{Server: "s", Tool: "edit"}, {Server: "a/b", ReadOnlyTools: true}} {
		got, err := parseToolRule(FormatToolRule(r))
		if err != nil || got != r {
			t.Errorf("%+v → %q → %+v, %v", r, FormatToolRule(r), got, err)
		}
	}
}
