package presentation_test

import (
	"encoding/json"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/presentation"
	"github.com/dsh-acp/dsh-acp/tools"
)

// The session's own events (usage, compaction notes, commands, the daemon's
// messages, project instructions) are drawn the same live and replayed,
// except the user's command, which the client drew itself live.
func TestSessionEventsAreDrawn(t *testing.T) {
	tests := []struct {
		name         string
		ev           event.Event
		live, replay string // the update's JSON; "" for none
	}{
		{"usage", event.Usage{Used: 1200, Size: 8000, Prompt: 1000},
			`{"sessionUpdate":"usage_update","size":8000,"used":1200}`, `{"sessionUpdate":"usage_update","size":8000,"used":1200}`},
		{"usage clamped, priced", event.Usage{Used: 9000, Size: 8000, Cost: 0.5, Currency: "USD"},
			`{"cost":{"amount":0.5,"currency":"USD"},"sessionUpdate":"usage_update","size":8000,"used":8000}`,
			`{"cost":{"amount":0.5,"currency":"USD"},"sessionUpdate":"usage_update","size":8000,"used":8000}`},
		{"compaction", event.Compaction{Note: "[context compacted]"},
			`{"content":{"text":"[context compacted]","type":"text"},"sessionUpdate":"agent_message_chunk"}`,
			`{"content":{"text":"[context compacted]","type":"text"},"sessionUpdate":"agent_message_chunk"}`},
		{"command", event.Command{Text: "/usage"}, "", `{"content":{"text":"/usage","type":"text"},"sessionUpdate":"user_message_chunk"}`},
		{"info", event.Info{Text: "Model: m."},
			`{"content":{"text":"Model: m.","type":"text"},"sessionUpdate":"agent_message_chunk"}`,
			`{"content":{"text":"Model: m.","type":"text"},"sessionUpdate":"agent_message_chunk"}`},
		{"instructions", event.Instructions{Files: []string{"/r/AGENTS.md"}, Bytes: 90, Cut: true},
			`{"content":{"text":"Reading the project instructions in /r/AGENTS.md (90 bytes, cut to fit).\n\n","type":"text"},"sessionUpdate":"agent_thought_chunk"}`,
			`{"content":{"text":"Reading the project instructions in /r/AGENTS.md (90 bytes, cut to fit).\n\n","type":"text"},"sessionUpdate":"agent_thought_chunk"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, replay := range []bool{false, true} {
				var got []acp.SessionUpdate
				p := presentation.NewPresenter(presentation.PresenterOptions{
					Send:   func(u acp.SessionUpdate) { got = append(got, u) },
					Cards:  tools.NewRegistry(),
					Replay: replay,
				})
				p.Emit(tt.ev)
				want := tt.live
				if replay {
					want = tt.replay
				}
				switch {
				case want == "" && len(got) != 0:
					t.Errorf("replay=%v: drew %d updates, want none", replay, len(got))
				case want != "" && len(got) != 1:
					t.Errorf("replay=%v: drew %d updates, want one", replay, len(got))
				case want != "":
					b, err := json.Marshal(got[0])
					if err != nil {
						t.Fatal(err)
					}
					if string(b) != want {
						t.Errorf("replay=%v:\n got %s\nwant %s", replay, b, want)
					}
				}
			}
		})
	}
}
