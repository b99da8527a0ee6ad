package presentation

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
)

var jsonStrings = []string{
	"", "plain", "a\x00b", "\x1b[31mred\x1b[0m\r\n", "tab\there", "\b\f", `quote " and \ back`,
	"<html> & </html>", "\u2028\u2029", "é€😀", "bad \xff\xfe utf-8", "\x7f del", strings.Repeat("\x00", 100),
}

// A live output update is the same bytes through the direct path as
// through the generic encoder.
func TestLiveOutputLineMatchesTheGenericEncoder(t *testing.T) {
	for _, data := range jsonStrings[1:] {
		u, ok := CardOutput("call_1", data, Caps{Terminal: true})
		if !ok {
			t.Fatal("no live output update")
		}
		var direct bytes.Buffer
		if err := NewUpdateWriter(&direct).SessionUpdate(t.Context(), sdk.SessionNotification{SessionId: "s\"1", Update: u}); err != nil {
			t.Fatal(err)
		}
		var generic bytes.Buffer
		enc := json.NewEncoder(&generic)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(wireNotification{JSONRPC: "2.0", Method: sdk.ClientMethodSessionUpdate,
			Params: wireParams{SessionID: "s\"1", Update: variant(u)}}); err != nil {
			t.Fatal(err)
		}
		if direct.String() != generic.String() {
			t.Errorf("data %q:\ndirect  %s\ngeneric %s", data, direct.Bytes(), generic.Bytes())
		}
	}
}

// Encoding live output allocates nothing once the writer's buffer has
// grown: no intermediate copy of the data, whatever it holds.
func TestLiveOutputEncodingDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop buffers at random; run without -race")
	}
	w := NewUpdateWriter(io.Discard)
	u, _ := CardOutput("call_1", strings.Repeat("\x00", 64<<10), Caps{Terminal: true})
	n := sdk.SessionNotification{SessionId: "s1", Update: u}
	if err := w.SessionUpdate(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(50, func() { _ = w.SessionUpdate(t.Context(), n) }); allocs > 0 {
		t.Errorf("a 64 KiB live output update allocated %v times, want 0", allocs)
	}
}

// Shapes the cards do not send today still encode as the SDK would.
func TestUpdateWriterMatchesTheSDKForOtherShapes(t *testing.T) {
	kind, status, title := sdk.ToolKindRead, sdk.ToolCallStatusFailed, "new <title>"
	line := 7
	updates := []sdk.SessionUpdate{
		{ToolCall: &sdk.SessionUpdateToolCall{ToolCallId: "c1", Title: "t & u", Kind: sdk.ToolKindEdit,
			Locations: []sdk.ToolCallLocation{{Path: "/a/b", Line: &line}}, RawInput: []any{1, "x", nil},
			RawOutput: map[string]any{"b": 1, "a": []int{2}}, Meta: map[string]any{"z": 1, "a": "x", "m": nil},
			Content: []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock("<b>"))}}},
		{ToolCallUpdate: &sdk.SessionToolCallUpdate{ToolCallId: "c1", Kind: &kind, Status: &status, Title: &title,
			RawInput: "just text", RawOutput: 3.5, Content: []sdk.ToolCallContent{}}},
		{ToolCallUpdate: &sdk.SessionToolCallUpdate{ToolCallId: "c2", Meta: map[string]any{}}},
		sdk.UpdateAgentMessageText("\u2028 line sep"),
	}
	for i, u := range updates {
		var buf bytes.Buffer
		n := sdk.SessionNotification{SessionId: "s1", Update: u}
		if err := NewUpdateWriter(&buf).SessionUpdate(t.Context(), n); err != nil {
			t.Fatal(err)
		}
		sdkLine, err := json.Marshal(n)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
			t.Fatalf("update %d: %v: %s", i, err, buf.Bytes())
		}
		var a, b any
		_ = json.Unmarshal(got.Params, &a)
		_ = json.Unmarshal(sdkLine, &b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("update %d differs from the SDK's:\n got %s\nwant %s", i, got.Params, sdkLine)
		}
	}
}
