package mcp

import (
	"encoding/json"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/presentation"
	"github.com/dsh-acp/dsh-acp/tools"
)

// FuzzPresent feeds arbitrary names, logged arguments, results and
// journaled Info (as a journal of any version might hold them) to the MCP
// presenters and through the ACP bridge: nothing may panic, and every
// intent and update must marshal.
func FuzzPresent(f *testing.F) {
	for _, seed := range []struct{ name, info, args, res string }{
		{"mcp__gh__list", `{"server":"gh","tool":"list","readOnly":true}`, `{"q":"x"}`, `{"text":"a"}`},
		{"mcp__gh__make", `{"server":"gh","tool":"make"}`, `{"n":1E1000}`, `{"text":"{\"a\":","payload":{"truncated":true}}`},
		{"mcp__x", `nope`, "\xff\xfe", `{"declined":"no","isError":true}`},
		{"mcp____", `{"server":"\u0000","tool":""}`, ``, `{"payload":{"failure":"disconnected"},"text":"` + "\x1b[31m" + `"}`},
		{"bash", `{}`, `{"command":"ls"}`, `{"text":"x","payload":"junk"}`},
	} {
		f.Add(seed.name, []byte(seed.info), []byte(seed.args), []byte(seed.res))
	}
	f.Fuzz(func(t *testing.T, name string, info, args, resJSON []byte) {
		var res event.Result
		_ = json.Unmarshal(resJSON, &res) // any shape: a partial or zero Result is fine
		c := NewCards(tools.NewBash(nil, tools.Config{}))
		c.LearnState(StateKey(name), info)
		var inf Info
		_ = json.Unmarshal(info, &inf)
		for _, pair := range []struct {
			in  tools.CallIntent
			out tools.ResultIntent
		}{
			{c.PresentCall(name, args), c.PresentResult(name, args, res)},
			{PresentCall(inf, args), PresentResult(inf, args, res)},
		} {
			if _, err := json.Marshal(pair.in); err != nil {
				t.Fatalf("call intent does not marshal: %v", err)
			}
			if _, err := json.Marshal(pair.out); err != nil {
				t.Fatalf("result intent does not marshal: %v", err)
			}
			for _, caps := range []presentation.Caps{{Terminal: true}, {}} {
				for _, u := range presentation.Replay("call_1", pair.in, pair.out, "/cwd", caps) {
					if _, err := json.Marshal(acp.SessionNotification{SessionId: "s", Update: u}); err != nil {
						t.Fatalf("update does not marshal: %v", err)
					}
				}
			}
		}
	})
}
