package mcp

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/tools"
)

func TestPresentCall(t *testing.T) {
	in := PresentCall(Info{Server: "gh", Tool: "list", ReadOnly: true}, json.RawMessage(`{ "q" : 1 }`))
	if in.Card != tools.CardGeneric || in.Title != "gh: list" || in.Kind != "read" ||
		string(in.RawInput.(json.RawMessage)) != `{"q":1}` {
		t.Errorf("%+v", in)
	}
	if in := PresentCall(Info{Server: "gh", Tool: "create"}, json.RawMessage("\xff")); in.Kind != "other" || in.RawInput != "\uFFFD" {
		t.Errorf("%+v", in)
	}
}

func TestPresentResult(t *testing.T) {
	info := Info{Server: "gh", Tool: "t"}
	for _, tc := range []struct {
		name    string
		res     event.Result
		failed  bool
		content []string
		reason  string
	}{
		{"text", event.Result{Text: "hello"}, false, []string{"hello"}, ""},
		{"json", event.Result{Text: `{"a":1}`}, false, []string{"```json\n{\"a\":1}\n```"}, ""},
		{"tool error", event.Result{Text: "broke\n[the tool reported an error]", IsError: true,
			Payload: Payload{ToolError: true}.encode()}, true, []string{"broke\n[the tool reported an error]"}, ""},
		{"declined", event.Result{Text: "The user declined.", IsError: true, Declined: "The user declined."},
			true, []string{"The user declined."}, "The user declined."},
		{"disconnected", event.Result{Text: "the gh MCP server is not connected any more", IsError: true,
			Payload: Payload{Failure: FailDisconnected}.encode()}, true,
			[]string{"the gh MCP server is not connected any more"}, "the gh MCP server is not connected any more"},
		{"empty", event.Result{}, false, nil, ""},
	} {
		out := PresentResult(info, nil, tc.res)
		if out.Card != tools.CardGeneric || out.Failed != tc.failed || !slices.Equal(out.Content, tc.content) || out.Reason != tc.reason {
			t.Errorf("%s: %+v", tc.name, out)
		}
	}
	truncated := PresentResult(info, nil, event.Result{Text: "{\"a\":\n[… 9 characters omitted]", Payload: Payload{Truncated: true, SpillPath: "/s"}.encode()})
	if truncated.Content[0][:7] != "```json" || truncated.RawOutput.(resultSummary).SpillPath != "/s" {
		t.Errorf("%+v", truncated)
	}
}

func TestCards(t *testing.T) {
	base := tools.NewBash(nil, tools.Config{})
	c := NewCards(base)
	if got := c.PresentCall("bash", json.RawMessage(`{"command":"ls","description":"x"}`)); got.Card != tools.CardTerminal {
		t.Errorf("bash drawn as %+v", got)
	}
	if got := c.PresentCall("mcp__gh__list_issues", nil); got.Title != "gh: list_issues" || got.Kind != "other" {
		t.Errorf("unlearned MCP name drawn as %+v", got)
	}
	if !c.LearnState(StateKey("mcp__gh__list_issues"), json.RawMessage(`{"server":"GitHub","tool":"list.issues","readOnly":true}`)) {
		t.Fatal("state not learned")
	}
	if got := c.PresentCall("mcp__gh__list_issues", nil); got.Title != "GitHub: list.issues" || got.Kind != "read" {
		t.Errorf("learned MCP name drawn as %+v", got)
	}
	for _, bad := range []struct{ key, value string }{
		{"permission.mode", `"ask"`}, {StateKey("bash"), `{"server":"a","tool":"b"}`},
		{StateKey("mcp__x__y"), `{"server":""}`}, {StateKey("mcp__x__y"), `nope`},
	} {
		if c.LearnState(bad.key, json.RawMessage(bad.value)) {
			t.Errorf("learned %s = %s", bad.key, bad.value)
		}
	}
	if got := c.PresentCall("mystery", nil); got.Title != "mystery" {
		t.Errorf("unknown tool drawn as %+v", got)
	}
	if got := c.PresentResult("mcp__gh__list_issues", nil, event.Result{Text: "x", IsError: true}); !got.Failed {
		t.Errorf("%+v", got)
	}
}

func TestToolboxSet(t *testing.T) {
	b := NewToolbox(tools.NewBash(nil, tools.Config{}))
	mk := func(name string, info Info) tools.Tool {
		return &tool{name: name, info: info, schema: json.RawMessage(`{"type":"object"}`)}
	}
	learned, err := b.Set([]tools.Tool{mk("mcp__a__x", Info{Server: "a", Tool: "x", ReadOnly: true})})
	if err != nil || len(learned) != 1 || learned["mcp__a__x"].Tool != "x" {
		t.Fatalf("learned %v, %v", learned, err)
	}
	if names := len(b.All()); names != 4 {
		t.Errorf("%d tools", names)
	}
	if learned, _ := b.Set([]tools.Tool{mk("mcp__a__x", Info{Server: "a", Tool: "x", ReadOnly: true})}); len(learned) != 0 {
		t.Errorf("relearned %v", learned)
	}
	need, _ := b.Needs("mcp__a__x", nil)
	if need.Kind != tools.NeedTool || !need.ReadOnly {
		t.Errorf("need %+v", need)
	}
	if _, err := b.Set([]tools.Tool{mk("bash", Info{})}); err == nil {
		t.Error("a clash with a base tool was accepted")
	}
	if _, ok := b.Lookup("mcp__a__x"); !ok {
		t.Error("a refused Set changed the tools")
	}
	// A call whose server left is still drawn from what was learned.
	b.Set(nil)
	if got := b.PresentCall("mcp__a__x", nil); got.Title != "a: x" || got.Kind != "read" {
		t.Errorf("%+v", got)
	}
}
