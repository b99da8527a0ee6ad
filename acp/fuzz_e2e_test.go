package acp_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
)

// The daemon answers each request exactly once, and notifications and
// stray responses never, whatever surrounds them: valid lines mutated byte
// by byte (invalid UTF-8 in keys and values, cut lines, changed bytes),
// lines repeated with the same id, notification floods — the input of an
// outside fuzz that once got two replies for one request. Bounded: a fixed
// set of generated inputs, each run to EOF.
func TestOneReplyPerRequestUnderMutatedInput(t *testing.T) {
	for i := range 6 {
		lines := acptest.MutatedLines([]byte(fmt.Sprintf("e2e-%d", i)))
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			out := runToEOF(t, strings.Join(lines, "\n")+"\n")
			sent, others := map[string]int{}, 0
			kinds := map[string]string{}
			for _, l := range lines {
				kind, id := acptest.StrictKind(l)
				switch kind {
				case "request":
					sent[id]++
					kinds[id] = kind
				case "other":
					others++
				}
			}
			replies, nullReplies := map[string]int{}, 0
			for _, l := range out {
				var m struct {
					ID     json.RawMessage `json:"id"`
					Method *string         `json:"method"`
				}
				if json.Unmarshal(l, &m) != nil || m.Method != nil {
					continue // a notification or the daemon's own request
				}
				if m.ID == nil || string(m.ID) == "null" {
					nullReplies++
					continue
				}
				replies[acptest.IDKey(m.ID)]++
			}
			for id, n := range sent {
				if replies[id] != n {
					t.Errorf("id %s: sent %d times as a request, answered %d times", id, n, replies[id])
				}
			}
			for id, n := range replies {
				if kinds[id] == "" && n > strings.Count(strings.Join(lines, "\n"), strings.TrimPrefix(strings.TrimPrefix(id, "n"), "s")) {
					t.Errorf("id %s: answered %d times, more than it was sent", id, n)
				}
			}
			if replies[acptest.IDKey(json.RawMessage("4"))] != 0 {
				t.Error("a stray response (id 4) was answered")
			}
			if total := nullReplies; total > others {
				t.Errorf("%d replies without an id for %d malformed lines", total, others)
			}
		})
	}
}
