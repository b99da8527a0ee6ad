package chat

import (
	"bytes"
	"strings"
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

// A question offers exactly the agent's options: the first of each kind by
// its letter, any other by its number; answers match keys, numbers and
// the yes/always/no words, and nothing else.
func TestQuestionOffersOnlyTheAgentsOptions(t *testing.T) {
	opt := func(id string, kind sdk.PermissionOptionKind, name string) sdk.PermissionOption {
		return sdk.PermissionOption{OptionId: sdk.PermissionOptionId(id), Kind: kind, Name: name}
	}
	tests := []struct {
		name    string
		opts    []sdk.PermissionOption
		want    string
		answers map[string]string // answer → option id, "" for no match
	}{
		{
			name: "no always option",
			opts: []sdk.PermissionOption{opt("ok", sdk.PermissionOptionKindAllowOnce, "Allow once"), opt("no", sdk.PermissionOptionKindRejectOnce, "Reject")},
			want: `allow "rm -rf build"? [y] Allow once  [n] Reject`,
			answers: map[string]string{"y": "ok", "Y ": "ok", "yes": "ok", "1": "ok", "2": "no", "n": "no", "no": "no",
				"a": "", "always": "", "3": "", "": "", "list the files": ""},
		},
		{
			name: "two always options",
			opts: []sdk.PermissionOption{
				opt("once", sdk.PermissionOptionKindAllowOnce, "Allow once"),
				opt("session", sdk.PermissionOptionKindAllowAlways, "Always allow `git push` in this session"),
				opt("project", sdk.PermissionOptionKindAllowAlways, "Always allow `git push` in this project"),
				opt("reject", sdk.PermissionOptionKindRejectOnce, "Reject"),
			},
			want:    "allow \"rm -rf build\"? [y] Allow once  [a] Always allow `git push` in this session  [3] Always allow `git push` in this project  [n] Reject",
			answers: map[string]string{"a": "session", "always": "session", "3": "project", "4": "reject", "p": ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			choices := choicesOf(tt.opts)
			if got := (question{title: "rm -rf build\nsecond line", choices: choices}).text(); got != strings.Replace(tt.want, `"rm -rf build"`, `"rm -rf build …"`, 1) {
				t.Errorf("question\n%s\nwant\n%s", got, tt.want)
			}
			for answer, id := range tt.answers {
				o, ok := match(choices, answer)
				if ok != (id != "") || ok && string(o.OptionId) != id {
					t.Errorf("answer %q picks %q (%v), want %q", answer, o.OptionId, ok, id)
				}
			}
		})
	}
}

// A session_info_update is not drawn (the banner names the session), so
// a chat and `dsh-acp replay` print alike.
func TestRendererIgnoresSessionInfo(t *testing.T) {
	var out bytes.Buffer
	r := NewRenderer(&out, false)
	r.Update(sdk.SessionUpdate{SessionInfoUpdate: &sdk.SessionSessionInfoUpdate{Title: sdk.Ptr("a title")}})
	if out.Len() != 0 {
		t.Errorf("drawn %q", out.String())
	}
}
