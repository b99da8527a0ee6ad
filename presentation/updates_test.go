package presentation

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

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
		OpenCard("c1", term, "/tmp", Caps{Terminal: true}),
		OpenCard("c2", generic, "/tmp", Caps{}),
		{CurrentModeUpdate: &sdk.SessionCurrentModeUpdate{CurrentModeId: "auto"}},
		{UsageUpdate: &sdk.SessionUsageUpdate{Used: 1234, Size: 8000}},
		{UsageUpdate: &sdk.SessionUsageUpdate{Used: 1, Size: 2, Cost: &sdk.Cost{Amount: 0.25, Currency: "USD"}}},
		{AvailableCommandsUpdate: &sdk.SessionAvailableCommandsUpdate{AvailableCommands: []sdk.AvailableCommand{
			{Name: "help", Description: "List the commands"},
			{Name: "model", Description: "Switch the model", Input: &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: "model id"}}},
		}}},
		{ConfigOptionUpdate: &sdk.SessionConfigOptionUpdate{ConfigOptions: []sdk.SessionConfigOption{selectOption("model", "m1", "m0", "m1")}}},
	}
	if u, ok := CardOutput("c1", "live\n", Caps{Terminal: true}); ok {
		updates = append(updates, u)
	}
	updates = append(updates, CloseCard("c1", term, res, Caps{Terminal: true}, false)...)
	updates = append(updates, CloseCard("c1", term, res, Caps{}, false)...)
	updates = append(updates, CloseCard("c2", generic, tools.ResultIntent{Card: tools.CardGeneric, Content: []string{"done"}}, Caps{}, false)...)

	for i, u := range updates {
		var buf bytes.Buffer
		w := NewUpdateWriter(&buf)
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

// selectOption is a select config option with values, current chosen.
func selectOption(id, current string, values ...string) sdk.SessionConfigOption {
	opts := make(sdk.SessionConfigSelectOptionsUngrouped, 0, len(values))
	for _, v := range values {
		opts = append(opts, sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(v), Name: v, Description: sdk.Ptr("about " + v)})
	}
	o := sdk.NewSessionConfigOptionSelect(sdk.SessionConfigValueId(current), sdk.SessionConfigSelectOptions{Ungrouped: &opts})
	o.Select.Id = sdk.SessionConfigId(id)
	o.Select.Name = id
	o.Select.Category = sdk.Ptr(sdk.SessionConfigOptionCategoryModel)
	return o
}
