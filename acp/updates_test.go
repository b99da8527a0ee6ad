package acp

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/presentation"
	"github.com/dsh-acp/dsh-acp/tools"
)

// The direct encoder must put on the wire exactly what the SDK would (as
// JSON values), for every update shape the daemon sends.
func TestUpdateWriterMatchesTheSDK(t *testing.T) {
	exit := 2
	term := tools.CallIntent{Card: tools.CardTerminal, Title: "ls -la", Kind: "execute", Description: "List files", RawInput: map[string]any{"command": "ls -la"}}
	generic := tools.CallIntent{Card: tools.CardGeneric, Title: "sleep 9", Kind: "execute", RawInput: "sleep 9", Content: []string{"wait <a> & b"}}
	res := tools.ResultIntent{Card: tools.CardTerminal, Output: "a\x1b[31mb\n", ExitCode: &exit, Failed: true, RawOutput: map[string]any{"exitCode": 2}}
	updates := []sdk.SessionUpdate{
		sdk.UpdateUserMessageText("hi"),
		sdk.UpdateAgentMessageText("an <answer> & more"),
		sdk.UpdateAgentThoughtText("hmm"),
		presentation.OpenCard("c1", term, "/tmp", presentation.Caps{Terminal: true}),
		presentation.OpenCard("c2", generic, "/tmp", presentation.Caps{}),
		{CurrentModeUpdate: &sdk.SessionCurrentModeUpdate{CurrentModeId: "auto"}},
		{UsageUpdate: &sdk.SessionUsageUpdate{Used: 1234, Size: 8000}},
		{UsageUpdate: &sdk.SessionUsageUpdate{Used: 1, Size: 2, Cost: &sdk.Cost{Amount: 0.25, Currency: "USD"}}},
		availableCommands(),
		{ConfigOptionUpdate: &sdk.SessionConfigOptionUpdate{ConfigOptions: append(modeOptions("ask"), modelOption("m1", []string{"m0", "m1"}))}},
	}
	if u, ok := presentation.CardOutput("c1", "live\n", presentation.Caps{Terminal: true}); ok {
		updates = append(updates, u)
	}
	updates = append(updates, presentation.CloseCard("c1", term, res, presentation.Caps{Terminal: true}, false)...)
	updates = append(updates, presentation.CloseCard("c1", term, res, presentation.Caps{}, false)...)
	updates = append(updates, presentation.CloseCard("c2", generic, tools.ResultIntent{Card: tools.CardGeneric, Content: []string{"done"}}, presentation.Caps{}, false)...)

	for i, u := range updates {
		var buf bytes.Buffer
		w := newUpdateWriter(&buf)
		n := sdk.SessionNotification{SessionId: "s1", Update: u}
		if err := w.SessionUpdate(t.Context(), n); err != nil {
			t.Fatal(err)
		}
		line := buf.Bytes()
		if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
			t.Fatalf("update %d: not one line: %q", i, line)
		}
		sdkParams, err := json.Marshal(n)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			JSONRPC string          `json:"jsonrpc"`
			Method  string          `json:"method"`
			Params  json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(line, &got); err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
		if got.JSONRPC != "2.0" || got.Method != "session/update" {
			t.Errorf("update %d: envelope %+v", i, got)
		}
		var a, b any
		_ = json.Unmarshal(got.Params, &a)
		_ = json.Unmarshal(sdkParams, &b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("update %d differs from the SDK's:\n got %s\nwant %s", i, got.Params, sdkParams)
		}
	}
}
