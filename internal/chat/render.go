// Package chat is a small terminal client for ACP agents: it draws a
// session's updates as a person would want to read them — streamed agent
// text, each tool call as a titled card with its live output, a coloured exit
// pill, the agent's plan as a checklist — and drives prompts, cancels and
// permission questions. Run is the client (`dsh-acp chat`); Renderer is the
// one drawing, which `dsh-acp replay` shares.
//
// On a terminal (stdin and stdout both) the chat is a Bubble Tea program
// (tui.go): an editable multi-line input (editor.go) with history across
// sessions (history.go), bracketed paste of any size, single-key answers to
// permission questions and a spinner with the elapsed time while a turn
// runs. What the session draws is printed above it into the terminal's own
// scrollback, word-wrapped to the terminal's width, the model's markdown
// styled line by line (markdown.go). Otherwise (piped input) each input
// line is a prompt and the drawing streams as it comes.
//
// # Known limits
//
//   - The model's markdown is styled line by line as it streams (headings,
//     emphasis, code, lists, quotes, fences), not laid out as a document:
//     tables keep their pipes. Glamour, which lays documents out, was left
//     out because linking it costs every start of the daemon (the same
//     binary) about 30 ms of package initialisation (chroma's lexers and
//     styles), measured with GODEBUG=inittrace=1.
//   - The daemon is the same binary, so it links Bubble Tea and pays for
//     its dependencies' package initialisation at every start, though it
//     never draws: ultraviolet's key tables, x/ansi's parser and
//     zero-width tables, termios, go-runewidth, colorprofile, terminfo
//     and the image/png and database/sql/driver packages go-colorful
//     pulls in — 43 KB in 64 allocations (GODEBUG=inittrace=1), about a
//     sixth of the daemon's package-initialisation time, and 1.03–1.09×
//     the CPU of a daemon start against the same daemon with the chat
//     stubbed out (paired runs, median of ratios, on a machine so loaded
//     that two identical binaries paired read 0.90×). This package
//     itself initialises nothing (a test holds it); the rest goes only
//     with a binary that does not link Bubble Tea.
//   - The input editor is the chat's own, not Bubbles' textarea, whose
//     clipboard dependency probes $PATH at every start of the daemon (the
//     same binary); it has no undo, no mouse, no clipboard of its own.
//   - A diff is by lines, not words: a changed line is drawn removed and
//     added whole. Two texts so different that the edit search passes its
//     bound (a rewrite of a large file) are drawn as all removed, then all
//     added, rather than aligned.
//   - A terminal without bracketed paste delivers a multi-line paste as
//     typed keys: each newline then sends the text typed so far.
//   - Piped input: Ctrl-C arrives as SIGINT, and two presses closer
//     together than the process handles one signal count as one (the
//     kernel does not queue standard signals).
package chat

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/tools"
)

// style holds the escape sequences used to draw; all empty without colour.
type style struct {
	reset, bold, dim, italic, red, green, yellow, cyan, magenta string
}

func newStyle(color bool) style {
	if !color {
		return style{}
	}
	return style{
		reset: "\x1b[0m", bold: "\x1b[1m", dim: "\x1b[2m", italic: "\x1b[3m",
		red: "\x1b[31m", green: "\x1b[32m", yellow: "\x1b[33m", cyan: "\x1b[36m", magenta: "\x1b[35m",
	}
}

// Renderer draws session updates on a terminal. Safe for concurrent use.
//
// It draws in one of two ways. Streaming (width 0, the default): every
// chunk is written as it comes, partial lines included — for pipes and
// replays. By lines (SetWidth > 0): only whole lines are written, each
// word-wrapped to the width with a hanging indent (a card's bar repeats on
// its continuation lines) and the agent's text styled as markdown; the line
// still being written is held back and shown by Pending.
type Renderer struct {
	mu    sync.Mutex
	w     io.Writer
	st    style
	width int
	cwd   string // diffs name files relative to it

	// what the last write left on screen
	section   string // "", "text", "thought", "card", …
	lineStart bool
	cards     map[string]*card
	running   *card // the newest unfinished card

	// drawing by lines
	partial  strings.Builder // the line being written
	partCard *card           // whose output partial is ("" kind: text or thought)
	md       markdown

	livePlan bool
	plan     []sdk.PlanEntry
}

type card struct {
	title    string
	terminal bool
	lineOpen bool // the card's output ended without a newline
	finished bool
	opened   time.Time
}

// NewRenderer draws on w, with ANSI colour when color is true, streaming.
func NewRenderer(w io.Writer, color bool) *Renderer {
	return &Renderer{w: w, st: newStyle(color), lineStart: true, cards: map[string]*card{}}
}

// SetWidth makes the renderer draw by lines wrapped at width columns (0:
// stream, as NewRenderer does).
func (r *Renderer) SetWidth(width int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.width = max(width, 0)
}

// KeepPlan makes plan updates replace a standing plan read with Plan
// instead of being printed: the chat's terminal shows it live.
func (r *Renderer) KeepPlan() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.livePlan = true
}

func (r *Renderer) printf(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	if s == "" {
		return
	}
	io.WriteString(r.w, s)
	r.lineStart = strings.HasSuffix(s, "\n")
}

// line writes one whole line, wrapped to the width (when drawing by lines)
// with continuation lines starting with indent.
func (r *Renderer) line(s, indent string) {
	r.printf("%s\n", wrap(s, r.width, indent))
}

// newline ends the current line if something is on it.
func (r *Renderer) newline() {
	r.flushPartial()
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
	if section != "text" {
		r.md = markdown{}
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
			r.stream(nil, tools.CleanTerminalText(t.Text))
		}
	case u.AgentThoughtChunk != nil:
		if t := u.AgentThoughtChunk.Content.Text; t != nil {
			r.enter("thought")
			r.stream(nil, tools.CleanTerminalText(t.Text))
		}
	case u.UserMessageChunk != nil:
		if t := u.UserMessageChunk.Content.Text; t != nil {
			r.userLine(t.Text)
		}
	case u.ToolCall != nil:
		tc := u.ToolCall
		r.openCard(tc.ToolCallId, tc.Title, tc.Content, tc.Meta, tc.Status)
	case u.ToolCallUpdate != nil:
		r.updateCard(u.ToolCallUpdate)
	case u.Plan != nil:
		r.drawPlan(u.Plan.Entries)
	case u.CurrentModeUpdate != nil:
		r.enter("mode")
		r.line(fmt.Sprintf("%s[mode: %s]%s", r.st.dim, u.CurrentModeUpdate.CurrentModeId, r.st.reset), "")
	}
}

// UserPrompt draws a prompt the user sent, as a replayed one is drawn.
func (r *Renderer) UserPrompt(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.userLine(text)
}

func (r *Renderer) userLine(text string) {
	r.enter("user")
	text = strings.TrimRight(tools.CleanTerminalText(text), "\n")
	for i, l := range strings.Split(text, "\n") {
		lead := "  "
		if i == 0 {
			lead = "> "
		}
		r.line(r.st.bold+lead+l+r.st.reset, "  ")
	}
}

// stream writes agent text, a thought or a card's output (c non-nil):
// as it comes when streaming, by whole lines otherwise.
func (r *Renderer) stream(c *card, data string) {
	if r.width == 0 {
		r.streamRaw(c, data)
		return
	}
	if r.partCard != c {
		r.flushPartial()
		r.partCard = c
	}
	for data != "" {
		i := strings.IndexByte(data, '\n')
		if i < 0 {
			r.partial.WriteString(data)
			return
		}
		r.partial.WriteString(data[:i])
		data = data[i+1:]
		r.emit(c, r.partial.String())
		r.partial.Reset()
	}
}

// streamRaw writes data as it comes: a card's output behind bars, text
// and thoughts as they are (thoughts dim).
func (r *Renderer) streamRaw(c *card, data string) {
	if c == nil {
		if r.section == "thought" {
			r.printf("%s%s%s", r.st.dim, data, r.st.reset)
		} else {
			r.printf("%s", data)
		}
		return
	}
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

// emit writes one whole line of text, thought or card output.
func (r *Renderer) emit(c *card, l string) {
	switch {
	case c != nil:
		bar := r.st.cyan + "│" + r.st.reset + " "
		r.line(bar+l, bar)
	case r.section == "thought":
		r.line(r.st.dim+l+r.st.reset, "")
	default:
		text, indent := r.md.line(l, r.st)
		r.line(text, indent)
	}
}

// flushPartial writes the held-back line, if any, as a whole line.
func (r *Renderer) flushPartial() {
	if r.width == 0 || r.partial.Len() == 0 {
		return
	}
	l := r.partial.String()
	r.partial.Reset()
	r.emit(r.partCard, l)
}

// Flush writes the line still being written, if any, as a whole line
// (drawing by lines; streaming, it is already out).
func (r *Renderer) Flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushPartial()
}

// Pending is the line being written and not yet whole (drawing by lines),
// as it will read: the terminal shows it live below the printed lines.
func (r *Renderer) Pending() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.partial.Len() == 0 {
		return ""
	}
	if r.partCard != nil {
		return r.st.cyan + "│" + r.st.reset + " " + r.partial.String()
	}
	if r.section == "thought" {
		return r.st.dim + r.partial.String() + r.st.reset
	}
	return r.partial.String()
}

// Running is the title of the newest card still running, and since when
// ("" when none is).
func (r *Renderer) Running() (string, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running == nil || r.running.finished {
		return "", time.Time{}
	}
	return firstLine(r.running.title), r.running.opened
}

// OpenCard draws a card's header unless the card is already open: a
// permission question draws its card first, so that the question always
// follows the header, whichever of the two reaches the client first.
func (r *Renderer) OpenCard(tc sdk.ToolCallUpdate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	title := "a call"
	if tc.Title != nil {
		title = *tc.Title
	}
	var status sdk.ToolCallStatus
	if tc.Status != nil {
		status = *tc.Status
	}
	r.openCard(tc.ToolCallId, title, tc.Content, tc.Meta, status)
}

// openCard draws a new card's header: after its content's text (its
// description) while it runs; a card that comes finished (a change card)
// shows its content behind its bars and closes at once.
func (r *Renderer) openCard(id sdk.ToolCallId, title string, content []sdk.ToolCallContent, meta map[string]any, status sdk.ToolCallStatus) {
	if c := r.cards[string(id)]; c != nil {
		if _, ok := meta["terminal_info"]; ok {
			c.terminal = true
		}
		return
	}
	c := &card{title: title, opened: time.Now()}
	_, c.terminal = meta["terminal_info"]
	r.cards[string(id)] = c
	r.running = c
	r.enter("card")
	done := status == sdk.ToolCallStatusCompleted || status == sdk.ToolCallStatusFailed
	if !done {
		for _, t := range contentTexts(content) {
			r.line(r.st.dim+tools.CleanTerminalText(t)+r.st.reset, "")
		}
	}
	r.line(fmt.Sprintf("%s┌ %s%s%s", r.st.cyan, r.st.bold, tools.CleanTerminalText(firstLine(title)), r.st.reset), "  ")
	if done {
		r.closeCard(c, content, meta, status == sdk.ToolCallStatusFailed)
	}
}

func (r *Renderer) updateCard(u *sdk.SessionToolCallUpdate) {
	c := r.cards[string(u.ToolCallId)]
	if c == nil || c.finished {
		return
	}
	if out, ok := u.Meta["terminal_output"].(map[string]any); ok {
		if data, ok := out["data"].(string); ok {
			r.section = "card"
			r.stream(c, tools.CleanTerminalText(data))
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
		r.line(r.st.yellow+"│ waiting for approval…"+r.st.reset, "")
	}
}

func (r *Renderer) finishCard(c *card, u *sdk.SessionToolCallUpdate) {
	r.closeCard(c, u.Content, u.Meta, *u.Status == sdk.ToolCallStatusFailed)
}

// closeCard ends c: its content (unless its terminal showed the output),
// then its pill — for a card of diffs, the lines they add and remove.
func (r *Renderer) closeCard(c *card, content []sdk.ToolCallContent, meta map[string]any, failed bool) {
	c.finished = true
	r.flushPartial()
	if c.lineOpen {
		r.printf("\n")
		c.lineOpen = false
	}
	pill := ""
	if !c.terminal {
		if added, removed, diffs := r.drawContent(c, content); diffs && !failed {
			pill = fmt.Sprintf("%s✓ +%d −%d%s", r.st.green, added, removed, r.st.reset)
		}
	}
	r.flushPartial()
	if pill == "" {
		pill = r.pill(meta, failed)
	}
	r.line(fmt.Sprintf("%s└%s %s", r.st.cyan, r.st.reset, pill), "  ")
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
	r.line(fmt.Sprintf("%s"+format+"%s", append(append([]any{r.st.yellow}, args...), r.st.reset)...), "")
}

// EndTurn closes the turn's output.
func (r *Renderer) EndTurn(reason sdk.StopReason) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.newline()
	if reason != sdk.StopReasonEndTurn {
		r.line(fmt.Sprintf("%s[%s]%s", r.st.dim, reason, r.st.reset), "")
	}
	r.section = ""
	r.md = markdown{}
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

// Banner prints the chat's one-line banner: "dsh-acp chat", the facts
// given (model, mode, sandbox, session id; empty ones left out), then
// extra (what keys do). Drawing by lines, the parts that do not fit the
// width are left out from the last, and what still overflows is cut.
func (r *Renderer) Banner(facts []string, extra ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	parts := []string{"dsh-acp chat"}
	for _, f := range append(facts, extra...) {
		if f != "" {
			parts = append(parts, f)
		}
	}
	text := strings.Join(parts, " · ")
	for r.width > 0 && len(parts) > 2 && displayWidth(text) > r.width {
		parts = parts[:len(parts)-1]
		text = strings.Join(parts, " · ")
	}
	if r.width > 0 {
		text = truncate(text, r.width)
	}
	r.newline()
	r.printf("%s%s%s\n", r.st.dim, text, r.st.reset)
	r.section = ""
}
