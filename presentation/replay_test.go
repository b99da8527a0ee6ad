package presentation_test

import (
	"encoding/json"
	"testing"
)

// cardState is what a client ends with after applying a card's updates the
// way ACP defines them: fields present in an update replace the old ones,
// terminal_output data appends.
type cardState struct {
	Title, Kind, Status     string
	Content, RawInput, Exit string // JSON
	RawOutput, TerminalCwd  string
	Terminal                string
	TerminalInfoOnUpdate    bool
}

func apply(t *testing.T, wire []wireUp) cardState {
	t.Helper()
	var c cardState
	for i, raw := range wire {
		var n struct {
			SessionID string `json:"sessionId"`
			Update    struct {
				Kind      string          `json:"sessionUpdate"`
				ID        string          `json:"toolCallId"`
				Title     *string         `json:"title"`
				ToolKind  *string         `json:"kind"`
				Status    *string         `json:"status"`
				Content   json.RawMessage `json:"content"`
				RawInput  json.RawMessage `json:"rawInput"`
				RawOutput json.RawMessage `json:"rawOutput"`
				Meta      struct {
					Info *struct {
						TerminalID string `json:"terminal_id"`
						Cwd        string `json:"cwd"`
					} `json:"terminal_info"`
					Output *struct {
						TerminalID string `json:"terminal_id"`
						Data       string `json:"data"`
					} `json:"terminal_output"`
					Exit json.RawMessage `json:"terminal_exit"`
				} `json:"_meta"`
			} `json:"update"`
		}
		if err := json.Unmarshal(raw, &n); err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
		u := n.Update
		if n.SessionID != sessionID || u.ID != callID {
			t.Fatalf("update %d names session %q call %q", i, n.SessionID, u.ID)
		}
		if (i == 0) != (u.Kind == "tool_call") {
			t.Fatalf("update %d is a %s: a card opens with one tool_call", i, u.Kind)
		}
		set := func(dst *string, v *string) {
			if v != nil {
				*dst = *v
			}
		}
		set(&c.Title, u.Title)
		set(&c.Kind, u.ToolKind)
		set(&c.Status, u.Status)
		if u.Content != nil {
			c.Content = string(u.Content)
		}
		if u.RawInput != nil {
			c.RawInput = string(u.RawInput)
		}
		if u.RawOutput != nil {
			c.RawOutput = string(u.RawOutput)
		}
		if u.Meta.Info != nil {
			if u.Kind != "tool_call" {
				c.TerminalInfoOnUpdate = true
			}
			c.TerminalCwd = u.Meta.Info.Cwd
		}
		if o := u.Meta.Output; o != nil {
			if o.TerminalID != callID {
				t.Fatalf("update %d: terminal_output for terminal %q", i, o.TerminalID)
			}
			c.Terminal += o.Data
		}
		if u.Meta.Exit != nil {
			c.Exit = string(u.Meta.Exit)
		}
	}
	return c
}

// TestReplayMatchesLive: a card replayed from the journal ends exactly as
// the live card did, and every card ends in a final status.
func TestReplayMatchesLive(t *testing.T) {
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			g := play(t, sc)
			live, replay := apply(t, g.Wire["terminal_live"]), apply(t, g.Wire["terminal_replay"])
			if live != replay {
				t.Errorf("replayed card differs from the live one:\nlive   %+v\nreplay %+v", live, replay)
			}
			for name, wire := range g.Wire {
				c := apply(t, wire)
				if c.Status != "completed" && c.Status != "failed" {
					t.Errorf("%s: card ends with status %q", name, c.Status)
				}
				if c.TerminalInfoOnUpdate {
					t.Errorf("%s: terminal_info on a tool_call_update (Zed reads it only on tool_call)", name)
				}
				if c.Title == "" {
					t.Errorf("%s: card has no title", name)
				}
			}
			if fb := apply(t, g.Wire["fallback"]); fb.Terminal != "" || fb.Exit != "" {
				t.Errorf("fallback card uses the terminal extension: %+v", fb)
			}
		})
	}
}
