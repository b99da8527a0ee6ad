package replay

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/tools"
)

// Presenter is the part of tools.Tool that says how a call's card looks.
type Presenter interface {
	PresentCall(args json.RawMessage) tools.CallIntent
	PresentResult(args json.RawMessage, res tools.Result) tools.ResultIntent
}

// PrintOptions configures PrintWith.
type PrintOptions struct {
	// Color adds ANSI colors and dims the model's reasoning.
	Color bool
	// Tool finds the presenter of a tool by name. When it is nil or finds
	// none, a built-in fallback reads a "command" argument (bash) and
	// prints other calls as their name and arguments.
	Tool func(name string) (Presenter, bool)
}

// Print writes a session as a person reads it in a terminal: a header with
// the id, cwd and creation time; "> " prompt lines; the agent's text; its
// reasoning (dimmed when color is set); each command as "$ command" with its
// output framed below and a status line ("✓ exit 0", "✗ exit 2",
// "✗ SIGKILL", "✗ timed out after 5000ms", …); background task notes;
// notices; errors; session state; and the load warnings at the end. Text
// from the journal is sanitized: escape sequences and other control
// characters never reach the terminal raw. Print shows l.Events as they
// are; pass Settle(l.Events) to close interrupted calls.
func Print(w io.Writer, l *Loaded, color bool) error {
	return PrintWith(w, l, PrintOptions{Color: color})
}

// PrintWith is Print with tool presenters (see PrintOptions).
func PrintWith(w io.Writer, l *Loaded, opt PrintOptions) error {
	bw := bufio.NewWriter(w)
	p := &printer{w: bw, opt: opt, calls: map[string]agent.ToolCall{}, lastTask: lastTaskResults(l.Events)}
	p.header(l.Header)
	for i, ev := range l.Events {
		p.event(i, ev)
	}
	p.state(l.State)
	p.warnings(l.Warnings)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("print session: %w", err)
	}
	return nil
}

// lastTaskResults maps each background task id to the index of the last
// result that reported its status.
func lastTaskResults(events []agent.Event) map[string]int {
	last := map[string]int{}
	for i, ev := range events {
		if r, ok := ev.(agent.ToolResult); ok && r.Result.TaskID != "" && r.Result.TaskStatus != "" {
			last[r.Result.TaskID] = i
		}
	}
	return last
}

const (
	sgrReset  = "\x1b[0m"
	sgrBold   = "\x1b[1m"
	sgrDim    = "\x1b[2m"
	sgrRed    = "\x1b[31m"
	sgrGreen  = "\x1b[32m"
	sgrYellow = "\x1b[33m"
	sgrCyan   = "\x1b[36m"
)

type printer struct {
	w        *bufio.Writer
	opt      PrintOptions
	started  bool
	calls    map[string]agent.ToolCall // calls printed, by id
	prev     agent.Event
	lastTask map[string]int
}

// block starts a block of lines, separated from the previous by a blank line.
func (p *printer) block() {
	if p.started {
		p.w.WriteString("\n")
	}
	p.started = true
}

// line writes prefix+text, sanitized, in style sgr (when colored).
func (p *printer) line(sgr, prefix, text string) {
	if p.opt.Color && sgr != "" {
		p.w.WriteString(sgr + prefix + text + sgrReset + "\n")
		return
	}
	p.w.WriteString(prefix + text + "\n")
}

// lines writes each line of text (sanitized) with prefix.
func (p *printer) lines(sgr, prefix, text string) {
	for _, l := range sanitizeLines(text) {
		p.line(sgr, prefix, l)
	}
}

// framed writes a call's output, each line behind a (dim) frame.
func (p *printer) framed(text string) {
	frame := "  │ "
	if p.opt.Color {
		frame = sgrDim + frame + sgrReset
	}
	for _, l := range sanitizeLines(text) {
		p.w.WriteString(frame + l + "\n")
	}
}

func (p *printer) header(h Header) {
	p.block()
	p.line(sgrBold, "session ", clean(h.ID))
	p.line("", "cwd     ", clean(h.Cwd))
	created := "unknown"
	if !h.Created.IsZero() {
		created = h.Created.UTC().Format(time.RFC3339)
	}
	if h.DaemonVersion != "" {
		created += " (dsh-acp " + clean(h.DaemonVersion) + ")"
	}
	p.line("", "created ", created)
}

func (p *printer) event(i int, ev agent.Event) {
	defer func() { p.prev = ev }()
	switch e := ev.(type) {
	case agent.UserPrompt:
		p.block()
		p.lines(sgrBold, "> ", e.Text)
	case agent.AssistantMessage:
		p.assistant(e)
	case agent.ToolCall:
		p.block()
		p.call(e)
		p.calls[e.ID] = e
	case agent.ToolResult:
		p.result(i, e)
	case agent.Notice:
		p.block()
		p.lines(sgrYellow, "notice: ", e.Text)
	case agent.ErrorMessage:
		p.block()
		p.lines(sgrRed, "error: ", e.Text)
	case agent.TurnEnd:
		p.block()
		p.line(sgrDim, "", "── end of turn ("+clean(string(e.StopReason))+")")
	}
}

func (p *printer) assistant(m agent.AssistantMessage) {
	if strings.TrimSpace(m.Reasoning) != "" {
		p.block()
		p.lines(sgrDim, "┊ ", m.Reasoning)
	}
	if strings.TrimSpace(m.Text) != "" {
		p.block()
		p.lines("", "", m.Text)
	}
}

func (p *printer) call(c agent.ToolCall) {
	in := p.present(c.Name).PresentCall(c.Args)
	if in.Description != "" {
		p.lines(sgrDim, "# ", in.Description)
	}
	prompt := "• "
	if in.Card == tools.CardTerminal {
		prompt = "$ "
	}
	title := in.Title
	if c.Direct {
		title += "   (typed by the user)"
	}
	p.lines(sgrCyan, prompt, title)
}

func (p *printer) result(i int, r agent.ToolResult) {
	c, seen := p.calls[r.ID]
	if prev, ok := p.prev.(agent.ToolCall); !seen || !ok || prev.ID != r.ID {
		// The result does not follow its call: name the call again.
		if !seen {
			c = agent.ToolCall{ID: r.ID, Name: r.Name, Args: r.Args}
		}
		p.block()
		p.call(c)
	}
	in := p.present(r.Name).PresentResult(r.Args, r.Result)
	body := in.Output
	if in.Card != tools.CardTerminal {
		body = strings.Join(in.Content, "\n")
	}
	if strings.TrimSpace(body) != "" {
		p.framed(strings.TrimSuffix(body, "\n"))
	}
	res := r.Result
	switch {
	case res.SpillPath != "":
		p.line(sgrDim, "  ", "full output: "+clean(res.SpillPath))
	case res.Truncated:
		p.line(sgrDim, "  ", "output truncated")
	}
	sgr, status := resultStatus(in, res)
	p.line(sgr, "  ", status)
	if IsBackgroundStart(res) && p.lastTask[res.TaskID] == i {
		p.line(sgrDim, "  ", GoneNote)
	}
}

// resultStatus is the status line of a finished call.
func resultStatus(in tools.ResultIntent, r tools.Result) (sgr, status string) {
	fail := func(s string) (string, string) { return sgrRed, "✗ " + s }
	switch {
	case r.Declined != "":
		return fail("declined (" + clean(r.Declined) + ")")
	case r.TimedOut:
		return fail(fmt.Sprintf("timed out after %dms", r.TimeoutMs))
	case in.Signal != "":
		return fail(clean(in.Signal))
	case in.ExitCode != nil && *in.ExitCode != 0:
		return fail(fmt.Sprintf("exit %d", *in.ExitCode))
	case r.IsError || in.Failed:
		return fail("failed")
	case in.ExitCode != nil:
		return sgrGreen, "✓ exit 0"
	case IsBackgroundStart(r):
		return sgrYellow, "⧗ background task " + clean(r.TaskID) + " running"
	case r.TaskID != "" && r.TaskStatus != "":
		return sgrGreen, "✓ task " + clean(r.TaskID) + " " + clean(r.TaskStatus)
	}
	return sgrGreen, "✓ done"
}

func (p *printer) state(st map[string]json.RawMessage) {
	if len(st) == 0 {
		return
	}
	p.block()
	p.line(sgrDim, "", "state:")
	keys := make([]string, 0, len(st))
	for k := range st {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		p.line(sgrDim, "  ", clean(k)+" = "+clean(string(st[k])))
	}
}

func (p *printer) warnings(ws []string) {
	if len(ws) == 0 {
		return
	}
	p.block()
	noun := "warnings"
	if len(ws) == 1 {
		noun = "warning"
	}
	p.line(sgrYellow, "", fmt.Sprintf("%d %s while reading the journal:", len(ws), noun))
	for _, w := range ws {
		p.line(sgrYellow, "  ", clean(w))
	}
}

func (p *printer) present(name string) Presenter {
	if p.opt.Tool != nil {
		if pr, ok := p.opt.Tool(name); ok && pr != nil {
			return pr
		}
	}
	return fallback{name: name}
}

// fallback presents calls without the tools' own presenters: a call with a
// "command" argument is a terminal (a generic card when run in the
// background), anything else is its name and raw arguments.
type fallback struct{ name string }

type fallbackArgs struct {
	Command     *string `json:"command"`
	Description string  `json:"description"`
	Background  bool    `json:"run_in_background"`
	TaskID      string  `json:"task_id"`
}

func (f fallback) PresentCall(args json.RawMessage) tools.CallIntent {
	var a fallbackArgs
	if json.Unmarshal(args, &a) == nil && a.Command != nil {
		in := tools.CallIntent{Card: tools.CardTerminal, Title: *a.Command, Kind: "execute", Description: a.Description}
		if a.Background {
			in.Card, in.Title = tools.CardGeneric, *a.Command+" &"
		}
		return in
	}
	title := f.name
	if len(args) > 0 {
		title += " " + string(args)
	}
	return tools.CallIntent{Card: tools.CardGeneric, Title: title, Kind: "other"}
}

func (f fallback) PresentResult(_ json.RawMessage, r tools.Result) tools.ResultIntent {
	// Only a foreground run has card output; a background task's read or
	// kill carries an exit code too, but its text is what there is to show.
	if (r.ExitCode != nil || r.Signal != "" || r.TimedOut) && r.TaskID == "" {
		return tools.ResultIntent{Card: tools.CardTerminal, Output: r.CardOutput, ExitCode: r.ExitCode, Signal: r.Signal, Failed: r.IsError}
	}
	return tools.ResultIntent{Card: tools.CardGeneric, Content: []string{r.Text}, Failed: r.IsError}
}
