package agent

import (
	"fmt"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/llm"
)

// keepChars bounds the history held in memory: a quarter more than the
// largest context window the daemon knows (1M tokens) at four characters a
// token, each command output counted at no more than its elided length
// (the least it could be sent at). Compaction keeps a session that talks
// to a model well under it; past it (a long run of `!` commands, a journal
// written before compaction existed, 100 000 calls reloaded) no model
// could read the oldest messages anyway, so they are dropped, whole calls
// at a time, and a summary entry says so. Live and restored sessions fold
// the same events through the same bound, so they keep the same messages.
const keepChars = 5_000_000

// droppedNote is what the summary entry says of dropped messages.
const droppedNote = "[dsh-acp: the %d oldest messages of this conversation were dropped: it had outgrown what a model can read]"

// bound is the history's memory bound.
type bound struct {
	limit int // in entryCost units; 0: unbounded
	size  int // entryCost summed over the entries
	// base is how many entries the bound removed, net of the summary
	// entry it added: a compaction's entry indices are kept in the
	// unbounded history's numbering (see virtual), so that a journal
	// written with or without the bound restores alike.
	base int
	// dropped counts the messages the current note stands for; note is
	// its text (entries[0] when it is still there), summary the earlier
	// summary it follows, if any.
	dropped       int
	note, summary string
}

func newBound() bound { return bound{limit: keepChars} }

// entryCost is an entry's share of the bound: its size, a command output
// counted at no more than its elided length.
func entryCost(e entry) int {
	n := msgSize(e.msg)
	if e.isOutput() {
		n = min(n, (elideHead+elideTail)*elideLineKeep+128)
	}
	return n
}

// enforce drops the oldest messages once the history is over its limit,
// down to three quarters of it, keeping every assistant message with its
// tool results and a summary at the front. It waits while calls are
// pending, so that no result can lose the message that made its call.
func (h *history) enforce() {
	b := &h.bound
	if b.limit <= 0 || b.size <= b.limit || len(h.pending) > 0 || len(h.entries) < 2 {
		return
	}
	start := 0 // the first entry that may go
	if h.entries[0].kind == kindSummary {
		start = 1
		if h.entries[0].msg.Content != b.note { // a compaction's summary: the note follows it
			b.summary, b.dropped = h.entries[0].msg.Content, 0
		}
	} else {
		b.summary, b.dropped = "", 0
	}
	size, k := b.size, start
	for i := start; size > b.limit/4*3; {
		j := i + 1 // one group: a message and the tool results that follow it
		for j < len(h.entries) && h.entries[j].msg.Role == llm.RoleTool {
			j++
		}
		if j >= len(h.entries) {
			break // the newest group stays
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
	b.note = fmt.Sprintf(droppedNote, b.dropped)
	if b.summary != "" {
		b.note = b.summary + "\n\n" + b.note
	}
	summary := entry{kind: kindSummary, msg: llm.Message{Role: llm.RoleUser, Content: b.note}}
	b.size = size + entryCost(summary)
	b.base += k - 1
	old := len(h.entries)
	h.entries[0] = summary
	h.entries = append(h.entries[:1], h.entries[k:]...)
	clear(h.entries[len(h.entries):old]) // let the dropped messages go
	switch {
	case h.promptAt >= k:
		h.promptAt -= k - 1
	case h.promptAt >= 0:
		h.promptAt = -1 // the open turn's prompt is in the summary now
	}
}

// virtual puts a compaction planned on this history into the unbounded
// history's numbering, before it is recorded.
func (h *history) virtual(c *event.Compaction) {
	if c.ElideBefore > 0 {
		c.ElideBefore += h.bound.base
	}
	if c.SummaryBefore > 0 {
		c.SummaryBefore += h.bound.base
	}
}

// physical turns a recorded compaction's entry counts into this history's
// numbering; summary is false when the entries it summarizes are already
// gone (the bound's summary stands for them).
func (h *history) physical(c event.Compaction) (elideBefore, summaryBefore int, summary bool) {
	base := h.bound.base
	elideBefore = max(c.ElideBefore-base, 0)
	if c.SummaryBefore <= 0 {
		return elideBefore, 0, false
	}
	if k := c.SummaryBefore - base; k >= 1 {
		h.bound.base = 0 // the summary replaces what the bound left of those entries too
		return elideBefore, k, true
	}
	h.bound.base = base - (c.SummaryBefore - 1)
	return elideBefore, 0, false
}

// recount sums the bound's size afresh (after a compaction rewrote
// entries).
func (h *history) recount() {
	n := 0
	for _, e := range h.entries {
		n += entryCost(e)
	}
	h.bound.size = n
}
