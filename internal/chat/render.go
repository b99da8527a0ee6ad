// Package chat is a small terminal client for ACP agents: it draws a
// session's updates as a person would want to read them — streamed agent
// text, each tool call as a titled card with its live output, a coloured exit
// pill — and drives prompts, cancels and permission questions. Run is the
// client (`dsh-acp chat`); Renderer is the one drawing, which `dsh-acp
// replay` shares.
//
// # Known limits
//
//   - The terminal stays in cooked mode: line editing is the terminal's own,
//     and what the user types during a turn is echoed into the drawing.
//   - Ctrl-C arrives as SIGINT: two presses closer together than the
//     process handles one signal count as one (the kernel does not queue
//     standard signals).
//   - A question takes the next whole line; a line typed earlier that
//     answers it (a bare "y") is taken as the answer.
package chat

import (
	"fmt"
	"io"
	"strings"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/tools"
)

// style holds the escape sequences used to draw; all empty without colour.
type style struct {
	reset, bold, dim, red, green, yellow, cyan string
}

func newStyle(color bool) style {
	if !color {
		return style{}
	}
	return style{
		reset: "\x1b[0m", bold: "\x1b[1m", dim: "\x1b[2m",
		red: "\x1b[31m", green: "\x1b[32m", yellow: "\x1b[33m", cyan: "\x1b[36m",
	}
}

// Renderer draws session updates on a terminal. Safe for concurrent use.
type Renderer struct {
	mu sync.Mutex
	w  io.Writer
	st style

	// what the last write left on screen
	section   string // "", "text", "thought", "card"
	lineStart bool
	cards     map[string]*card
}

type card struct {
	title    string
	terminal bool
	lineOpen bool // the card's output ended without a newline
	finished bool
}

// NewRenderer draws on w, with ANSI colour when color is true.
func NewRenderer(w io.Writer, color bool) *Renderer {
	return &Renderer{w: w, st: newStyle(color), lineStart: true, cards: map[string]*card{}}
}

func (r *Renderer) printf(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	if s == "" {
		return
	}
	io.WriteString(r.w, s)
	r.lineStart = strings.HasSuffix(s, "\n")
}

// newline ends the current line if something is on it.
func (r *Renderer) newline() {
	if !r.lineStart {
		r.printf("\n")
	}
}

// enter switches to a section, separating it from the previous one.
func (r *Renderer) enter(section string) {
	if r.section == section {
		return
	}
	r.newline()
	if r.section != "" {
		r.printf("\n")
	}
	r.section = section
}

// Update draws one session/update.
func (r *Renderer) Update(u sdk.SessionUpdate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case u.AgentMessageChunk != nil:
		if t := u.AgentMessageChunk.Content.Text; t != nil {
			r.enter("text")
			r.printf("%s", tools.CleanTerminalText(t.Text))
		}
	case u.AgentThoughtChunk != nil:
		if t := u.AgentThoughtChunk.Content.Text; t != nil {
			r.enter("thought")
			r.printf("%s%s%s", r.st.dim, tools.CleanTerminalText(t.Text), r.st.reset)
		}
	case u.UserMessageChunk != nil:
		if t := u.UserMessageChunk.Content.Text; t != nil {
			r.enter("user")
			r.printf("%s> %s%s\n", r.st.bold, tools.CleanTerminalText(t.Text), r.st.reset)
		}
	case u.ToolCall != nil:
		r.openCard(u.ToolCall)
	case u.ToolCallUpdate != nil:
		r.updateCard(u.ToolCallUpdate)
	case u.CurrentModeUpdate != nil:
		r.enter("mode")
		r.printf("%s[mode: %s]%s\n", r.st.dim, u.CurrentModeUpdate.CurrentModeId, r.st.reset)
	}
}

func (r *Renderer) openCard(tc *sdk.SessionUpdateToolCall) {
	c := &card{title: tc.Title}
	_, c.terminal = tc.Meta["terminal_info"]
	r.cards[string(tc.ToolCallId)] = c
	r.enter("card")
	for _, t := range contentTexts(tc.Content) {
		r.printf("%s%s%s\n", r.st.dim, tools.CleanTerminalText(t), r.st.reset)
	}
	r.printf("%s┌ %s%s%s\n", r.st.cyan, r.st.bold, tools.CleanTerminalText(firstLine(tc.Title)), r.st.reset)
}

func (r *Renderer) updateCard(u *sdk.SessionToolCallUpdate) {
	c := r.cards[string(u.ToolCallId)]
	if c == nil || c.finished {
		return
	}
	if out, ok := u.Meta["terminal_output"].(map[string]any); ok {
		if data, ok := out["data"].(string); ok {
			r.cardOutput(c, data)
		}
	}
	if u.Status == nil {
		return
	}
	switch *u.Status {
	case sdk.ToolCallStatusCompleted, sdk.ToolCallStatusFailed:
		r.finishCard(c, u)
	case sdk.ToolCallStatusPending:
		r.section = "card"
		r.newline()
		r.printf("%s│ waiting for approval…%s\n", r.st.yellow, r.st.reset)
	}
}

// cardOutput prints output inside the card, each line behind a bar. The
// output is cleaned first (tools.CleanTerminalText): a command's escape
// sequences never reach the user's terminal.
func (r *Renderer) cardOutput(c *card, data string) {
	r.section = "card"
	data = tools.CleanTerminalText(data)
	for len(data) > 0 {
		if !c.lineOpen {
			r.printf("%s│%s ", r.st.cyan, r.st.reset)
			c.lineOpen = true
		}
		i := strings.IndexByte(data, '\n')
		if i < 0 {
			r.printf("%s", data)
			return
		}
		r.printf("%s\n", data[:i])
		c.lineOpen = false
		data = data[i+1:]
	}
}

func (r *Renderer) finishCard(c *card, u *sdk.SessionToolCallUpdate) {
	c.finished = true
	if c.lineOpen {
		r.printf("\n")
		c.lineOpen = false
	}
	if !c.terminal {
		for _, t := range contentTexts(u.Content) {
			r.cardOutput(c, strings.TrimSuffix(t, "\n")+"\n")
		}
	}
	failed := *u.Status == sdk.ToolCallStatusFailed
	r.printf("%s└%s %s\n", r.st.cyan, r.st.reset, r.pill(u.Meta, failed))
}

// pill is the exit-status summary: green for success, red otherwise.
func (r *Renderer) pill(meta map[string]any, failed bool) string {
	label := "done"
	if failed {
		label = "failed"
	}
	if exit, ok := meta["terminal_exit"].(map[string]any); ok {
		if sig, ok := exit["signal"].(string); ok && sig != "" {
			label = sig
		} else if code, ok := exit["exit_code"].(float64); ok {
			label = fmt.Sprintf("exit %d", int(code))
		}
	}
	if failed {
		return r.st.red + "✗ " + label + r.st.reset
	}
	return r.st.green + "✓ " + label + r.st.reset
}

// Notice prints a line from the client itself (errors, cancel notes).
func (r *Renderer) Notice(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.enter("notice")
	r.printf("%s"+format+"%s\n", append(append([]any{r.st.yellow}, args...), r.st.reset)...)
}

// EndTurn closes the turn's output.
func (r *Renderer) EndTurn(reason sdk.StopReason) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.newline()
	if reason != sdk.StopReasonEndTurn {
		r.printf("%s[%s]%s\n", r.st.dim, reason, r.st.reset)
	}
	r.section = ""
}

func contentTexts(items []sdk.ToolCallContent) []string {
	var out []string
	for _, it := range items {
		if it.Content != nil && it.Content.Content.Text != nil {
			out = append(out, it.Content.Content.Text.Text)
		}
	}
	return out
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// Banner prints the chat's one-line banner: the facts given (model, mode,
// sandbox, session id; empty ones left out), then how to quit and cancel.
func (r *Renderer) Banner(facts ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var parts []string
	for _, f := range facts {
		if f != "" {
			parts = append(parts, f)
		}
	}
	parts = append(parts, "Ctrl-D quits, Ctrl-C cancels")
	r.newline()
	r.printf("%sdsh-acp chat · %s%s\n", r.st.dim, strings.Join(parts, " · "), r.st.reset)
	r.section = ""
}

// PromptMarker is what the chat shows where it waits for a prompt.
const PromptMarker = "> "

// Prompt shows the prompt marker, on a line of its own, and leaves the
// cursor after it for the user's typing (echoed by the terminal).
func (r *Renderer) Prompt() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.newline()
	r.printf("%s%s%s", r.st.bold, PromptMarker, r.st.reset)
	r.lineStart = false
	r.section = ""
}

// Ask shows a question and leaves the cursor after it for the answer.
func (r *Renderer) Ask(question string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.enter("notice")
	r.printf("%s%s%s ", r.st.yellow, question, r.st.reset)
	r.lineStart = false
}

// Typed records that the user ended a line on the terminal (its Enter,
// echoed, moved the cursor to a new line), or that the terminal echoed ^C
// after a discarded line when interrupted is true: the cursor then still
// sits after it, and a newline follows.
func (r *Renderer) Typed(interrupted bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if interrupted {
		r.printf("\n")
	}
	r.lineStart = true
}

// Kept shows a line the user typed earlier (kept while a question waited)
// as the prompt now sent, after the prompt marker.
func (r *Renderer) Kept(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.printf("%s\n", tools.CleanTerminalText(line))
}
