package permission

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"ask": ModeAsk, "": ModeAsk, " AUTO ": ModeAuto, "read-only": ModeReadOnly} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"readonly", "yolo", "ask auto"} {
		if _, err := ParseMode(bad); err == nil {
			t.Errorf("ParseMode(%q) succeeded", bad)
		}
	}
	if got := Modes(); !slices.Equal(got, []Mode{ModeAsk, ModeAuto, ModeReadOnly}) {
		t.Errorf("Modes() = %q", got)
	}
}

func TestDecisionAndVerdictStrings(t *testing.T) {
	if Allow.String() != "allow" || Ask.String() != "ask" || Deny.String() != "deny" || Decision(9).String() != "decision(9)" {
		t.Error("Decision.String")
	}
	if got := (Verdict{Decision: Deny, Reason: "no"}).String(); got != "deny: no" {
		t.Errorf("Verdict.String() = %q", got)
	}
}

func TestSessionAllowActsAsAllowRule(t *testing.T) {
	if v := Decide(ModeAsk, Rules{}, nil, "npm install"); v.Decision != Ask {
		t.Fatalf("without session allow: %v", v)
	}
	if v := Decide(ModeAsk, Rules{}, []string{"npm install"}, "npm install lodash"); v.Decision != Allow {
		t.Errorf("with session allow: %v", v)
	}
	v := Decide(ModeAsk, Rules{Deny: []string{"npm install"}}, []string{"npm install"}, "npm install")
	if v.Decision != Deny {
		t.Errorf("deny must win over session allow: %v", v)
	}
}

func TestReadOnlyModeIgnoresAllowRules(t *testing.T) {
	rules := Rules{Allow: []string{"go test", "rm"}}
	for _, cmd := range []string{"go test ./...", "rm x"} {
		v := Decide(ModeReadOnly, rules, []string{"go test"}, cmd)
		if v.Decision != Deny || !strings.Contains(v.Reason, "read-only mode") {
			t.Errorf("%q: %v, want a read-only mode denial", cmd, v)
		}
	}
}

func TestAutoModeWithoutDenyRulesAllowsWhatCannotBeJudged(t *testing.T) {
	for _, cmd := range []string{"$CMD x", "echo 'unterminated", "rm -rf /"} {
		if v := Decide(ModeAuto, Rules{}, nil, cmd); v.Decision != Allow {
			t.Errorf("%q: %v, want Allow", cmd, v)
		}
	}
	v := Decide(ModeAuto, Rules{Deny: []string{"shutdown"}}, nil, "$CMD x")
	if v.Decision != Deny || !strings.Contains(v.Reason, "cannot be checked against the deny rules") {
		t.Errorf("with deny rules: %v", v)
	}
}

func TestUnknownModeIsAsk(t *testing.T) {
	if v := Decide(Mode("bogus"), Rules{}, nil, "npm install"); v.Decision != Ask {
		t.Errorf("unknown mode: %v, want Ask", v)
	}
}

func TestReasons(t *testing.T) {
	rules := Rules{Deny: []string{"rm -rf"}, Allow: []string{"go test"}}
	cases := []struct {
		mode Mode
		cmd  string
		want []string
	}{
		{ModeAsk, "ls && rm -rf /tmp/x", []string{"denied", "rm -rf /tmp/x", `"rm -rf"`}},
		{ModeAsk, "go test ./...", []string{`allowed by rule "go test"`}},
		{ModeAsk, "cat x", []string{"read-only"}},
		{ModeAsk, "export CI=1", []string{"assignments to ordinary variables"}},
		{ModeAsk, "export FOO=bar", []string{"assigns FOO", "can change which programs run"}},
		{ModeAsk, "npm install", []string{"npm install", "not on the read-only list"}},
		{ModeAsk, "$X", []string{"cannot judge", "$X"}},
		{ModeAuto, "rm $F", []string{"might match", `"rm -rf"`, "literally"}},
		{ModeReadOnly, "sed -i s/a/b/ f", []string{"read-only mode", "sed -i"}},
		{ModeReadOnly, "echo > f", []string{"read-only mode", "> f", "writes a file"}},
		{ModeAsk, "a; b; c; d; e", []string{"and 2 more"}},
	}
	for _, c := range cases {
		v := Decide(c.mode, rules, nil, c.cmd)
		for _, w := range c.want {
			if !strings.Contains(v.Reason, w) {
				t.Errorf("%s %q: reason %q lacks %q", c.mode, c.cmd, v.Reason, w)
			}
		}
	}
}

func TestAlwaysAllowOffer(t *testing.T) {
	cases := []struct {
		cmd  string
		want []string
	}{
		{"npm install && npm install -D x", []string{"npm install"}},
		{"ls && npm install", []string{"npm install"}},
		{"npm install && make test", nil}, // two different prefixes
		{"npm install > log", nil},        // the redirection needs asking too
		{"rm build", nil},                 // never for rm
		{"npm install $(x)", nil},         // x cannot be judged
		{"sudo npm install", nil},         // sudo is never remembered
		{"PATH=/x npm install", nil},      // a sensitive assignment
		{"env npm install", []string{"npm install"}},
	}
	for _, c := range cases {
		v := Decide(ModeAsk, Rules{}, nil, c.cmd)
		if v.Decision != Ask || !slices.Equal(v.Prefixes, c.want) {
			t.Errorf("%q: %v %q, want Ask with %q", c.cmd, v, v.Prefixes, c.want)
		}
	}
}

func TestAnalyzeCommands(t *testing.T) {
	cases := map[string][][]string{
		"FOO=1 timeout 5 rm -f x":          {{"rm", "-f", "x"}},
		"sudo -u bob rm x":                 {{"sudo", "-u", "bob", "rm", "x"}, {"rm", "x"}},
		"echo $(date) | sh -c 'wc -l'":     {{"echo", "$(date)"}, {"date"}, {"wc", "-l"}},
		"find . -exec grep -H x {} \\;":    {{"find", ".", "-exec", "grep", "-H", "x", "{}", ";"}, {"grep", "-H", "x", "{}"}},
		"f() { ls; }; f":                   {{"ls"}},
		"xargs -n1 env A=b printf '%s\\n'": {{"printf", "%s\\n"}},
		"cat \"$HOME/x\"":                  {{"cat", "\"$HOME/x\""}},
	}
	for cmd, want := range cases {
		got := Analyze(cmd).Commands
		if !slices.EqualFunc(got, want, slices.Equal[[]string]) {
			t.Errorf("Analyze(%q).Commands = %q, want %q", cmd, got, want)
		}
	}
}

func TestAnalyzeBounds(t *testing.T) {
	long := strings.Repeat("ls; ", maxCommandBytes/4+1)
	if an := Analyze(long); an.Judgeable || an.ReadOnly {
		t.Errorf("a command over %d bytes must not be judgeable", maxCommandBytes)
	}
	deep := "ls"
	for range maxDepth + 2 {
		deep = "sh -c " + quoteWord(deep)
	}
	an := Analyze(deep)
	if an.Judgeable || !strings.Contains(strings.Join(an.Reasons, " "), "nested too deeply") {
		t.Errorf("deep nesting: %+v", an)
	}
	if an := Analyze(""); !an.ReadOnly || !an.Judgeable || len(an.Commands) != 0 {
		t.Errorf("empty command: %+v", an)
	}
}

// TestDocsExamples pins the examples table of docs/permissions.md.
func TestDocsExamples(t *testing.T) {
	rules := Rules{Allow: []string{"go test", "git push"}, Deny: []string{"rm -rf", "curl"}}
	cases := []struct {
		cmd, want, prefix string
	}{
		{"git status && git diff --stat", "AAA", ""},
		{"go test ./... 2>&1 | tail -20", "AAD", ""},
		{"npm install", "QAD", "npm install"},
		{"git status && rm -rf build", "DDD", ""},
		{"rm -fr build", "DDD", ""},
		{"echo $(curl -s x)", "DDD", ""},
		{"bash -c 'rm -rf /tmp/x'", "DDD", ""},
		{"rm -r \"$dir\"", "QDD", ""},
		{"rm -r -- \"$dir\"", "QAD", ""},
		{"$EDITOR notes.txt", "QDD", ""},
		{"sed -i 's/a/b/' f", "QAD", ""},
		{"echo hi > notes.txt", "QAD", ""},
		{"sudo apt install jq", "QAD", ""},
		{"timeout 60 go test ./...", "AAD", ""},
		{"git push --force", "AAD", ""},
		{"find . -name '*.go' -exec grep -l TODO {} +", "AAA", ""},
		{"flock f rm -rf x", "DDD", ""},
		{"rm -f -r x", "DDD", ""},
		{"./rm -rf x", "DDD", ""},
		{"awk 'NR > 1' data.csv", "AAA", ""},
		{"sort *", "QAD", ""},
		{"bash -lc 'go test ./...'", "QAD", ""},
		{"alias r=rm", "QDD", ""},
	}
	letter := map[Decision]byte{Allow: 'A', Ask: 'Q', Deny: 'D'}
	for _, c := range cases {
		var got []byte
		var prefixes []string
		for _, m := range Modes() {
			v := Decide(m, rules, nil, c.cmd)
			got = append(got, letter[v.Decision])
			if m == ModeAsk {
				prefixes = v.Prefixes
			}
		}
		var want []string
		if c.prefix != "" {
			want = []string{c.prefix}
		}
		if string(got) != c.want || !slices.Equal(prefixes, want) {
			t.Errorf("%q: %s %q, want %s %q", c.cmd, got, prefixes, c.want, want)
		}
	}
}

// TestDocsExamplesTable reads the examples table of docs/permissions.md
// and decides every row, so the document cannot drift from the judge.
func TestDocsExamplesTable(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "permissions.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(data), "\n## Examples\n")
	if !ok {
		t.Fatal("docs/permissions.md has no Examples section")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	rules := Rules{Allow: []string{"go test", "git push"}, Deny: []string{"rm -rf", "curl"}}
	if !strings.Contains(table, "`allow: [\"go test\", \"git push\"]` and `deny: [\"rm -rf\", \"curl\"]`") {
		t.Fatal("the Examples section no longer states the rules this test decides with")
	}
	rows := 0
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.ReplaceAll(line, `\|`, "\x00"), "|")
		if len(cells) != 7 {
			t.Fatalf("row %q has %d cells", line, len(cells))
		}
		for i := range cells {
			cells[i] = strings.ReplaceAll(strings.TrimSpace(cells[i]), "\x00", "|")
		}
		cmd := strings.Trim(cells[1], "`")
		for i, m := range Modes() {
			if v := Decide(m, rules, nil, cmd); v.Decision.String() != cells[2+i] {
				t.Errorf("%q in %s mode: %v, the document says %s", cmd, m, v, cells[2+i])
			}
		}
		v := Decide(ModeAsk, rules, nil, cmd)
		if want := strings.Trim(cells[5], "`"); strings.Join(v.Prefixes, " ") != want {
			t.Errorf("%q: always allow %q, the document says %q", cmd, v.Prefixes, want)
		}
		rows++
	}
	if rows < 15 {
		t.Errorf("read %d example rows, want at least 15", rows)
	}
}
