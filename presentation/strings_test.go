package presentation_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor/executorfake"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/presentation"
	"github.com/dsh-acp/dsh-acp/tools"
)

// A card output journaled before the tools removed string sequences is
// replayed without them: an old journal's OSC 52 never reaches the card.
func TestReplayStripsStringSequencesOfOldJournals(t *testing.T) {
	set := tools.NewBuiltin(executorfake.New(), tools.Config{})
	args := json.RawMessage(`{"command":"x","description":"X"}`)
	zero := 0
	res := tools.WithOutcome(event.Result{Text: "ok", CardOutput: "\x1b]52;c;ZXZpbA==\x07\x1b[32mok\x1b[0m\x1b]0;title\x1b\\\n"},
		tools.Outcome{ExitCode: &zero})
	ups := presentation.Replay(callID, set.PresentCall("bash", args), set.PresentResult("bash", args, res), sessionCwd,
		presentation.Caps{Terminal: true})
	b, err := json.Marshal(ups)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); strings.Contains(s, `\u001b]`) || !strings.Contains(s, `\u001b[32mok\u001b[0m\n`) {
		t.Errorf("replayed card %s", s)
	}
}
