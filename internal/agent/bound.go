package agent

import (
	"fmt"

	"github.com/dsh-acp/dsh-acp/internal/llm"
)

// keepFactor bounds the history held in memory: at most keepFactor times
// the history budget, counting each command output at no more than its
// elided length (the least the conversation could ever be sent at). A
// conversation that large is far past any model's context window, so a
// request carrying it fails on every provider; dropping its oldest
// messages loses nothing a model could still read, and a session of any
// length — restored from a journal of 100 000 calls, or run that long —
// holds a bounded history.
const keepFactor = 8

// droppedNote is the user message that stands for dropped messages.
const droppedNote = "[dsh-acp: the %d oldest messages of this conversation were dropped: it had outgrown what a model can read]"

// bound is the history's memory bound: its counted size, the limit, and
// how many messages were dropped so far.
type bound struct {
	limit   int // 0: unbounded
	size    int // sum of entryCost over entries
	dropped int // messages dropped; entries[0] is the note when > 0
}

func newBound(budget int) bound { return bound{limit: keepFactor * budget} }

// entryCost is an entry's share of the bound: its size, a command output
// counted at no more than its elided length.
func entryCost(e entry) int {
	n := msgSize(e.msg)
	if e.output {
		n = min(n, elideBytes+128)
	}
	return n
}

// enforce drops the oldest messages once the history is over its limit,
// down to three quarters of it, keeping every assistant message with its
// tool results. It waits while calls are pending, so that no result can
// lose the message that made its call.
func (h *history) enforce() {
	b := &h.bound
	if b.limit <= 0 || b.size <= b.limit || len(h.pending) > 0 {
		return
	}
	start := 0
	if b.dropped > 0 {
		start = 1 // the note stays, updated
	}
	target := b.limit / 4 * 3
	size, k := b.size, start
	for i := start; size > target; {
		// One group: a message and the tool results that follow it.
		j := i + 1
		for j < len(h.entries) && h.entries[j].msg.Role == llm.RoleTool {
			j++
		}
		if j >= len(h.entries) {
			break // the last group stays
		}
		for ; i < j; i++ {
			size -= entryCost(h.entries[i])
		}
		k = j
	}
	if k == start {
		return
	}
	if start == 1 {
		size -= entryCost(h.entries[0])
	}
	b.dropped += k - start
	note := entry{msg: llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf(droppedNote, b.dropped)}}
	b.size = size + entryCost(note)
	old := len(h.entries)
	h.entries[0] = note
	h.entries = append(h.entries[:1], h.entries[k:]...)
	clear(h.entries[len(h.entries):old]) // let the dropped messages go
	switch {
	case h.promptAt >= k:
		h.promptAt -= k - 1
	case h.promptAt >= 0:
		h.promptAt = 0 // the open turn's start was dropped: the note stands for it
	}
}
