package agent

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/llm"
)

// A history far past what a model can read keeps its newest messages
// within the bound, every tool result after the message that made its
// call, and a note saying how many messages went.
func TestHistoryStaysWithinItsBound(t *testing.T) {
	const limit = 16000
	h := newHistory(&ledger{})
	h.bound.limit = limit
	h.apply(event.UserPrompt{Text: "run many commands"})
	out := strings.Repeat("some output line\n", 20) // 340 bytes
	for i := range 2000 {
		calls := []event.CallInfo{{ID: fmt.Sprintf("c%d", i), Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)}}
		if i%7 == 0 { // parallel calls now and then
			calls = append(calls, event.CallInfo{ID: fmt.Sprintf("c%d-b", i), Name: "bash", Args: json.RawMessage(`{"command":"pwd"}`)})
		}
		h.apply(event.AssistantMessage{Reasoning: "next", ToolCalls: calls})
		for _, c := range calls {
			h.apply(event.ToolResult{ID: c.ID, Name: c.Name, Args: c.Args, Result: event.Result{Text: out}})
		}
		checkBoundedHistory(t, &h, limit)
	}
	h.apply(event.AssistantMessage{Text: "all done"})
	h.apply(event.TurnEnd{StopReason: event.EndTurn})
	checkBoundedHistory(t, &h, limit)
	if h.bound.dropped == 0 {
		t.Fatal("nothing was dropped from a history 60 times its bound")
	}
	msgs := h.messages("system", true)
	want := fmt.Sprintf(droppedNote, h.bound.dropped)
	if msgs[1].Role != llm.RoleUser || msgs[1].Content != want {
		t.Errorf("first message after the system prompt = %+v, want the note %q", msgs[1], want)
	}
	if last := msgs[len(msgs)-1]; last.Content != "all done" {
		t.Errorf("last message = %+v, want the final answer", last)
	}
}

// A history within its bound is left whole.
func TestHistoryWithinItsBoundDropsNothing(t *testing.T) {
	h := newHistory(&ledger{})
	h.apply(event.UserPrompt{Text: "hi"})
	for i := range 100 {
		id := fmt.Sprintf("c%d", i)
		h.apply(event.AssistantMessage{ToolCalls: []event.CallInfo{{ID: id, Name: "bash", Args: json.RawMessage(`{}`)}}})
		h.apply(event.ToolResult{ID: id, Name: "bash", Result: event.Result{Text: "ok"}})
	}
	if h.bound.dropped != 0 || len(h.entries) != 201 {
		t.Errorf("dropped %d, %d entries; want 0 and 201", h.bound.dropped, len(h.entries))
	}
}

func checkBoundedHistory(t *testing.T, h *history, limit int) {
	t.Helper()
	size := 0
	calls := map[string]bool{}
	for i, e := range h.entries {
		size += entryCost(e)
		switch e.msg.Role {
		case llm.RoleAssistant:
			calls = map[string]bool{}
			for _, c := range e.msg.ToolCalls {
				calls[c.ID] = true
			}
		case llm.RoleTool:
			if !calls[e.msg.ToolCallID] {
				t.Fatalf("entry %d: result of %s without the message that made the call", i, e.msg.ToolCallID)
			}
		}
	}
	if size != h.bound.size {
		t.Fatalf("counted size %d, the bound says %d", size, h.bound.size)
	}
	if len(h.pending) == 0 && size > limit {
		t.Fatalf("history of %d over its bound %d with no call pending", size, limit)
	}
	if h.bound.dropped > 0 && (h.entries[0].kind != kindSummary || !strings.Contains(h.entries[0].msg.Content, "[dsh-acp: the ")) {
		t.Fatalf("entry 0 = %q, want the note", h.entries[0].msg.Content)
	}
}

// callEvents are a prompt and n bash calls, each with its result.
func callEvents(n int) []event.Event {
	evs := []event.Event{event.UserPrompt{Text: "run many commands"}}
	out := strings.Repeat("some output line\n", 20)
	for i := range n {
		c := event.CallInfo{ID: fmt.Sprintf("c%d", i), Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)}
		evs = append(evs, event.AssistantMessage{ToolCalls: []event.CallInfo{c}},
			event.ToolResult{ID: c.ID, Name: c.Name, Args: c.Args, Result: event.Result{Text: out}})
	}
	return evs
}

// A compaction recorded without the bound (an older journal: its entry
// indices count every message) and one recorded with it (indices in the
// same numbering: see virtual) both leave a bounded history with what an
// unbounded one keeps.
func TestCompactionIndicesSurviveTheBound(t *testing.T) {
	apply := func(h *history, evs []event.Event) {
		for _, ev := range evs {
			h.apply(ev)
		}
	}
	before := callEvents(400) // 801 entries, far over the test's bound
	after := callEvents(3)[1:]
	bounded := newHistory(&ledger{})
	bounded.bound.limit = 16000
	apply(&bounded, before)
	base := bounded.bound.base
	if base == 0 {
		t.Fatal("the bound dropped nothing; the test needs a smaller limit")
	}
	// An older daemon recorded this on all 801 entries...
	compaction := event.Compaction{Reason: event.CompactThreshold, ElideBefore: base + 10, SummaryBefore: base + 20, Summary: "what happened"}
	// ... a daemon with the bound plans it on its own entries, then puts it
	// in the same numbering.
	live := compaction
	live.ElideBefore, live.SummaryBefore = 10, 20
	bounded.virtual(&live)
	if live != compaction {
		t.Fatalf("virtual gave %+v, want the unbounded numbering %+v", live, compaction)
	}

	unbounded := newHistory(&ledger{})
	unbounded.bound.limit = 0
	apply(&unbounded, before)
	apply(&unbounded, []event.Event{compaction})
	apply(&unbounded, after)
	apply(&bounded, []event.Event{compaction})
	apply(&bounded, after)
	replayed := newHistory(&ledger{})
	replayed.bound.limit = 16000
	apply(&replayed, before)
	apply(&replayed, []event.Event{live})
	apply(&replayed, after)

	for name, h := range map[string]*history{"bounded": &bounded, "replayed": &replayed} {
		got, want := h.messages("system", true), unbounded.messages("system", true)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s history after the compaction: %d messages, want the unbounded %d:\n%+v\nwant\n%+v", name, len(got), len(want), got[:2], want[:2])
		}
	}
}
