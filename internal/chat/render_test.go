package chat

import (
	"bytes"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
)

func status(s sdk.ToolCallStatus) *sdk.ToolCallStatus { return &s }

// A session drawn without colour reads as a transcript: text, then each
// card with its title, its output behind bars, and an exit pill.
func TestRendererDrawsCards(t *testing.T) {
	var out bytes.Buffer
	r := NewRenderer(&out, false)
	r.Update(sdk.UpdateAgentThoughtText("thinking"))
	r.Update(sdk.UpdateAgentMessageText("Let me look."))
	r.Update(sdk.SessionUpdate{ToolCall: &sdk.SessionUpdateToolCall{
		ToolCallId: "c1", Title: "ls -la\nsecond line", Status: sdk.ToolCallStatusInProgress,
		Content: []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock("List files")), sdk.ToolTerminalRef("c1")},
		Meta:    map[string]any{"terminal_info": map[string]any{"terminal_id": "c1"}},
	}})
	r.Update(sdk.SessionUpdate{ToolCallUpdate: &sdk.SessionToolCallUpdate{ToolCallId: "c1",
		Meta: map[string]any{"terminal_output": map[string]any{"terminal_id": "c1", "data": "a\nb"}}}})
	r.Update(sdk.SessionUpdate{ToolCallUpdate: &sdk.SessionToolCallUpdate{ToolCallId: "c1",
		Meta: map[string]any{"terminal_output": map[string]any{"terminal_id": "c1", "data": "c\r\n"}}}})
	r.Update(sdk.SessionUpdate{ToolCallUpdate: &sdk.SessionToolCallUpdate{ToolCallId: "c1", Status: status(sdk.ToolCallStatusFailed),
		Meta: map[string]any{"terminal_exit": map[string]any{"terminal_id": "c1", "exit_code": float64(2), "signal": nil}}}})
	// A generic card shows its content at the end; a signal names itself.
	r.Update(sdk.SessionUpdate{ToolCall: &sdk.SessionUpdateToolCall{ToolCallId: "c2", Title: "sleep 9", Status: sdk.ToolCallStatusInProgress}})
	r.Update(sdk.SessionUpdate{ToolCallUpdate: &sdk.SessionToolCallUpdate{ToolCallId: "c2", Status: status(sdk.ToolCallStatusCompleted),
		Content: []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock("Started background task bash-1."))}}})
	r.Update(sdk.UpdateAgentMessageText("Done."))
	r.EndTurn(sdk.StopReasonCancelled)

	want := "thinking\n\n" +
		"Let me look.\n\n" +
		"List files\n" +
		"┌ ls -la …\n" +
		"│ a\n" +
		"│ bc\n" +
		"└ ✗ exit 2\n" +
		"┌ sleep 9\n" +
		"│ Started background task bash-1.\n" +
		"└ ✓ done\n\n" +
		"Done.\n" +
		"[cancelled]\n"
	if out.String() != want {
		t.Errorf("drawn:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestRendererColoursThePill(t *testing.T) {
	var out bytes.Buffer
	r := NewRenderer(&out, true)
	r.Update(sdk.SessionUpdate{ToolCall: &sdk.SessionUpdateToolCall{ToolCallId: "c1", Title: "true"}})
	r.Update(sdk.SessionUpdate{ToolCallUpdate: &sdk.SessionToolCallUpdate{ToolCallId: "c1", Status: status(sdk.ToolCallStatusCompleted),
		Meta: map[string]any{"terminal_exit": map[string]any{"exit_code": float64(0)}}}})
	if !bytes.Contains(out.Bytes(), []byte("\x1b[32m✓ exit 0\x1b[0m")) {
		t.Errorf("no green pill in %q", out.String())
	}
}
