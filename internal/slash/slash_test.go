package slash

import (
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/agent"
)

func text(s string) agent.PromptBlock { return agent.PromptBlock{Type: "text", Text: s} }

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		pb                []agent.PromptBlock
		name, args, typed string
		extra             int
		ok                bool
	}{
		{[]agent.PromptBlock{text("  /model  deepseek-chat ")}, "model", "deepseek-chat", "/model  deepseek-chat", 0, true},
		{[]agent.PromptBlock{text("/help"), {Type: "resource_link", URI: "file:///x"}}, "help", "", "/help", 1, true},
		{[]agent.PromptBlock{text("/bogus x")}, "", "", "", 0, false},
		{[]agent.PromptBlock{text("please /help")}, "", "", "", 0, false},
		{[]agent.PromptBlock{{Type: "image"}, text("/help")}, "", "", "", 0, false},
		{nil, "", "", "", 0, false},
	} {
		name, args, typed, extra, ok := Parse(tc.pb)
		if name != tc.name || args != tc.args || typed != tc.typed || extra != tc.extra || ok != tc.ok {
			t.Errorf("Parse(%+v) = %q %q %q %d %v", tc.pb, name, args, typed, extra, ok)
		}
	}
}

func TestWord(t *testing.T) {
	for in, want := range map[string]string{"/bogus x": "bogus", " /help": "help", "/": "", "/usr/bin/ls": "", "hello": "", "/a\tb": ""} {
		got, ok := Word(in)
		if got != want || ok != (want != "") {
			t.Errorf("Word(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

// Every command is advertised, with its hint, and listed by /help.
func TestAvailableAndHelp(t *testing.T) {
	u := Available().AvailableCommandsUpdate
	if u == nil || len(u.AvailableCommands) != len(Commands) {
		t.Fatalf("update %+v", u)
	}
	help := Help()
	for i, c := range Commands {
		ac := u.AvailableCommands[i]
		if ac.Name != c.Name || (c.Hint != "") != (ac.Input != nil) {
			t.Errorf("advertised %+v for %+v", ac, c)
		}
		if !strings.Contains(help, "/"+c.Name) {
			t.Errorf("/help does not list /%s", c.Name)
		}
	}
}

func TestTexts(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q", n, got)
		}
	}
	u := Usage(agent.UsageReport{Used: 64000, Size: 128000, Threshold: 100000, Model: "m", Known: true, Currency: "USD", Cost: 0.5})
	for _, s := range []string{"64,000 of 128,000 tokens (50 %), counted by the provider", "Cost so far: 0.5000 USD."} {
		if !strings.Contains(u, s) {
			t.Errorf("usage %q lacks %q", u, s)
		}
	}
	m := Models("b", []string{"a", "b"}, func(string) int { return 65536 })
	if !strings.Contains(m, "Model: b (context window 65,536 tokens)") || !strings.Contains(m, "* b\n") || !strings.Contains(m, "  a\n") {
		t.Errorf("models %q", m)
	}
}
