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
// journal's, so both arrive at the same messages.
type history struct {
	entries []entry
	// promptAt is the index of the open turn's prompt message, -1 when no
	// turn is open or the turn has none (a direct command).
	promptAt int
	// answered reports that the open turn has had a model response; until
	// then, delivered notices go before the prompt.
	answered bool
	// pending are the calls awaiting their result, in call order.
	pending []pendingCall
	bound   bound // what is kept in memory (bound.go)
}

type entry struct {
	msg llm.Message
	// output marks a command's output, which may be elided when the
	// conversation outgrows its budget.
	output bool
}

type pendingCall struct {
	id, name string
	args     json.RawMessage
	direct   bool
}

// newHistory returns an empty history for a session whose model reads
// about budget characters of it (see keepFactor).
func newHistory(budget int) history { return history{promptAt: -1, bound: newBound(budget)} }

// apply folds one event into the history. Events without a bearing on the
// conversation (deltas, output, error messages) are ignored, as are results
// for calls that are not pending.
func (h *history) apply(ev event.Event) {
	switch e := ev.(type) {
	case event.UserPrompt:
		h.append(entry{msg: llm.Message{Role: llm.RoleUser, Content: e.Text}})
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
	e := entry{msg: llm.Message{Role: llm.RoleUser, Content: text}}
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
	h.append(entry{msg: m})
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
		h.append(entry{output: true, msg: llm.Message{Role: llm.RoleUser, Content: directMessage(p.args, text)}})
		return
	}
	h.append(entry{output: true, msg: llm.Message{Role: llm.RoleTool, ToolCallID: p.id, Content: text}})
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

// messages is the conversation as sent to the model: the system prompt, then
// the history with old command output elided when the whole exceeds budget
// characters, reasoning kept only on tool-call messages (and not at all
// unless keepReasoning), and consecutive user messages merged.
func (h *history) messages(system string, budget int, keepReasoning bool) []llm.Message {
	contents := h.elided(budget)
	out := make([]llm.Message, 0, len(h.entries)+1)
	out = append(out, llm.Message{Role: llm.RoleSystem, Content: system})
	for i, e := range h.entries {
		m := e.msg
		m.Content = contents[i]
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

// Elision keeps this many lines (and bytes) of an old output.
const (
	elideLines = 10
	elideBytes = 2000
)

// elided returns each entry's content, with the oldest command outputs cut
// to their first lines when the conversation exceeds budget, until it is
// within three quarters of it. The open turn's messages are never cut. The
// result depends only on the entries, so it is stable as the history grows.
func (h *history) elided(budget int) []string {
	contents := make([]string, len(h.entries))
	total := 0
	for i, e := range h.entries {
		contents[i] = e.msg.Content
		total += msgSize(e.msg)
	}
	if budget <= 0 || total <= budget {
		return contents
	}
	protect := len(h.entries)
	if h.promptAt >= 0 {
		protect = h.promptAt
	}
	target := budget / 4 * 3
	for i := 0; i < protect && total > target; i++ {
		if !h.entries[i].output {
			continue
		}
		short := elide(contents[i])
		total -= len(contents[i]) - len(short)
		contents[i] = short
	}
	return contents
}

// msgSize approximates a message's share of the context, in characters.
func msgSize(m llm.Message) int {
	n := len(m.Content) + len(m.Reasoning)
	for _, c := range m.ToolCalls {
		n += len(c.Name) + len(c.Args)
	}
	return n
}

func elide(s string) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) <= elideLines && len(s) <= elideBytes {
		return s
	}
	keep := strings.Join(lines[:min(elideLines, len(lines))], "")
	if len(keep) > elideBytes {
		keep = strings.ToValidUTF8(keep[:elideBytes], "")
	}
	total := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		total++
	}
	rest := total - strings.Count(keep, "\n")
	short := fmt.Sprintf("%s\n[older output elided: %d more lines; run the command again if you need them]",
		strings.TrimRight(keep, "\n"), rest)
	if len(short) >= len(s) {
		return s
	}
	return short
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
