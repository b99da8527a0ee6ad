package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/llm"
)

// history is a session's conversation, built only by folding events through
// apply: the live loop records each event and applies it, Restore applies the
// journal's, so both arrive at the same messages — compactions included,
// since a compaction is an event too (see compact.go).
type history struct {
	entries []entry
	// promptAt is the index of the open turn's prompt message, -1 when no
	// turn is open or the turn has none (a direct command, or a prompt a
	// compaction summarized).
	promptAt int
	// answered reports that the open turn has had a model response; until
	// then, delivered notices go before the prompt.
	answered bool
	// pending are the calls awaiting their result, in call order.
	pending []pendingCall
	// acct is the token accounting the Usage and Compaction events carry.
	acct *ledger
	// announced is the digest of the project instructions last shown.
	announced string
	bound     bound // what is kept in memory (bound.go)
}

// entryKind is what an entry of the history is, for compaction.
type entryKind uint8

const (
	kindPrompt    entryKind = iota // the user's prompt
	kindNotice                     // a queued notice, delivered
	kindAssistant                  // a model response
	kindOutput                     // a tool call's result (role tool)
	kindDirect                     // a direct command and its result (role user): a turn of its own
	kindSummary                    // a compaction's summary of earlier turns
)

type entry struct {
	msg  llm.Message
	kind entryKind
	// elided marks an output a compaction has cut to its first and last
	// lines (or considered and left, when it was short).
	elided bool
}

// isOutput reports whether e is command output a compaction may elide.
func (e entry) isOutput() bool { return e.kind == kindOutput || e.kind == kindDirect }

// startsTurn reports whether e opens a turn of the user's.
func (e entry) startsTurn() bool { return e.kind == kindPrompt || e.kind == kindDirect }

type pendingCall struct {
	id, name string
	args     json.RawMessage
	direct   bool
}

// newHistory is an empty history accounting into acct.
func newHistory(acct *ledger) history { return history{promptAt: -1, acct: acct, bound: newBound()} }

// apply folds one event into the history. Events without a bearing on the
// conversation (deltas, output, messages for the user) are ignored, as are
// results for calls that are not pending.
func (h *history) apply(ev event.Event) {
	switch e := ev.(type) {
	case event.UserPrompt:
		h.append(entry{kind: kindPrompt, msg: llm.Message{Role: llm.RoleUser, Content: e.Text}})
		h.promptAt, h.answered = len(h.entries)-1, false
	case event.Notice:
		h.addNotice(e.Text)
	case event.AssistantMessage:
		h.answered = true
		h.addAssistant(e)
	case event.ToolCall:
		if e.Direct {
			h.openDirect(e)
		}
	case event.ToolResult:
		h.addResult(e)
	case event.TurnEnd:
		h.promptAt, h.answered = -1, false
	case event.Compaction:
		h.compact(e)
		h.acct.compacted(e)
	case event.Usage:
		h.acct.used(e)
	case event.Instructions:
		h.announced = e.Digest
	}
}

func (h *history) append(e entry) {
	h.entries = append(h.entries, e)
	h.bound.size += entryCost(e)
	h.enforce()
}

// addNotice puts a notice delivered with a turn's first request before the
// turn's prompt (the model reads: history, notices, prompt); later ones go at
// the end, after the tool results they followed.
func (h *history) addNotice(text string) {
	e := entry{kind: kindNotice, msg: llm.Message{Role: llm.RoleUser, Content: text}}
	if h.promptAt < 0 || h.answered {
		h.append(e)
		return
	}
	h.entries = append(h.entries, entry{})
	copy(h.entries[h.promptAt+1:], h.entries[h.promptAt:])
	h.entries[h.promptAt] = e
	h.bound.size += entryCost(e)
	h.promptAt++
}

func (h *history) addAssistant(e event.AssistantMessage) {
	if e.Text == "" && len(e.ToolCalls) == 0 {
		return // nothing the provider would accept (a cancel before any answer)
	}
	m := llm.Message{Role: llm.RoleAssistant, Content: e.Text}
	if len(e.ToolCalls) > 0 {
		m.Reasoning = e.Reasoning // sent back only with tool calls; see messages
	}
	for _, c := range e.ToolCalls {
		m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Name, Args: argsText(c.Args)})
		h.pending = append(h.pending, pendingCall{id: c.ID, name: c.Name, args: c.Args})
	}
	h.append(entry{kind: kindAssistant, msg: m})
}

// openDirect starts a direct command: its prompt ("!cmd") gives way to the
// message that will carry the command and its result.
func (h *history) openDirect(e event.ToolCall) {
	if h.promptAt >= 0 && h.promptAt == len(h.entries)-1 {
		h.bound.size -= entryCost(h.entries[h.promptAt])
		h.entries[h.promptAt] = entry{}
		h.entries = h.entries[:h.promptAt]
	}
	h.promptAt = -1
	h.pending = append(h.pending, pendingCall{id: e.ID, name: e.Name, args: e.Args, direct: true})
}

func (h *history) addResult(e event.ToolResult) {
	i := h.pendingIndex(e.ID)
	if i < 0 {
		return
	}
	p := h.pending[i]
	h.pending = append(h.pending[:i], h.pending[i+1:]...)
	text := e.Result.Text
	if strings.TrimSpace(text) == "" {
		text = "(no output)"
	}
	if p.direct {
		h.append(entry{kind: kindDirect, msg: llm.Message{Role: llm.RoleUser, Content: directMessage(p.args, text)}})
		return
	}
	h.append(entry{kind: kindOutput, msg: llm.Message{Role: llm.RoleTool, ToolCallID: p.id, Content: text}})
}

func (h *history) pendingIndex(id string) int {
	for i, p := range h.pending {
		if p.id == id {
			return i
		}
	}
	return -1
}

// directMessage is what the model reads about a command the user ran.
func directMessage(args json.RawMessage, result string) string {
	var a struct {
		Command string `json:"command"`
	}
	_ = json.Unmarshal(args, &a)
	return fmt.Sprintf("The user ran this command directly (not a call of yours):\n$ %s\n\nIts result:\n%s", a.Command, result)
}

// messages is the conversation as sent to the model: the system prompt,
// then the history, reasoning kept only on tool-call messages (and not at
// all unless keepReasoning), and consecutive user messages merged. What a
// compaction changed is already in the entries.
func (h *history) messages(system string, keepReasoning bool) []llm.Message {
	out := make([]llm.Message, 0, len(h.entries)+1)
	out = append(out, llm.Message{Role: llm.RoleSystem, Content: system})
	for _, e := range h.entries {
		m := e.msg
		if !keepReasoning {
			m.Reasoning = ""
		}
		last := &out[len(out)-1]
		if m.Role == llm.RoleUser && last.Role == llm.RoleUser {
			last.Content += "\n\n" + m.Content
			continue
		}
		out = append(out, m)
	}
	return out
}

// compact applies a compaction: the outputs before c.ElideBefore are
// elided, then the first c.SummaryBefore entries give way to one summary
// message. The dropped entries are released.
func (h *history) compact(c event.Compaction) {
	defer h.recount()
	elideBefore, summaryBefore, summary := h.physical(c)
	for i := range min(elideBefore, len(h.entries)) {
		e := &h.entries[i]
		if e.isOutput() && !e.elided {
			e.msg.Content = elide(e.msg.Content)
			e.elided = true
		}
	}
	k := min(summaryBefore, len(h.entries))
	if !summary || k <= 0 {
		return
	}
	kept := make([]entry, 0, len(h.entries)-k+1)
	kept = append(kept, entry{kind: kindSummary, msg: llm.Message{Role: llm.RoleUser, Content: summaryMessage(c)}})
	h.entries = append(kept, h.entries[k:]...)
	switch {
	case h.promptAt < 0:
	case h.promptAt < k:
		h.promptAt = -1 // the open turn's prompt is in the summary now
	default:
		h.promptAt += 1 - k
	}
}

// eventArgs is the journal-safe form of arguments as the model sent them:
// valid JSON as is, anything else as a JSON string holding the raw text (a
// json.RawMessage must be valid to be encoded). Empty arguments mean {}.
func eventArgs(raw string) json.RawMessage {
	if strings.TrimSpace(raw) == "" {
		return json.RawMessage(`{}`)
	}
	if json.Valid([]byte(raw)) {
		return json.RawMessage(raw)
	}
	b, _ := json.Marshal(raw)
	return b
}

// argsText is the arguments text the model reads back in its own message:
// the compact JSON, or the raw text eventArgs wrapped in a string.
func argsText(a json.RawMessage) string {
	if len(a) > 0 && a[0] == '"' {
		var s string
		if json.Unmarshal(a, &s) == nil {
			return s
		}
	}
	var buf bytes.Buffer
	if json.Compact(&buf, a) == nil {
		return buf.String()
	}
	return string(a)
}
