package chat

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/term"
	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/tools"
)

// runTerminal runs the chat as a terminal program: the conversation runs
// in its own goroutine, fed by the program's input, and its drawing is
// printed above the program's view. It returns once both have ended.
func runTerminal(ctx context.Context, o Options, a *agentProc, r *Renderer, it *interrupter) error {
	out := newOutbox()
	r.w = out
	r.KeepPlan()
	width := widthOf(o.Out)
	r.SetWidth(width)
	prompts := make(chan string, 1)
	m := newTerminalModel(r, loadHistory(o.HistoryPath), it, prompts, width)
	p := tea.NewProgram(m, tea.WithInput(o.In), tea.WithOutput(o.Out), tea.WithContext(ctx))
	stop := make(chan struct{})
	go out.print(p, stop)
	fe := &terminal{p: p, r: r, out: out}
	type result struct {
		sid sdk.SessionId
		err error
	}
	done := make(chan result, 1)
	go func() {
		sid, err := converse(ctx, o, a, r, fe, inputs{prompts: prompts, cancels: it.cancels, quit: it.quit})
		out.sync()
		p.Send(doneMsg{})
		done <- result{sid, err}
	}()
	_, perr := p.Run()
	it.end() // the program ended first (killed): end the chat too
	close(stop)
	out.goDirect(o.Out)
	res := <-done
	if res.err == nil && res.sid != "" {
		st := newStyle(o.Color)
		fmt.Fprintf(o.Out, "%sresume: dsh-acp chat --resume %s%s\n", st.dim, res.sid, st.reset)
	}
	if res.err == nil && perr != nil {
		return fmt.Errorf("terminal: %w", perr)
	}
	return res.err
}

// widthOf is out's width in columns when it is a terminal that knows it,
// else 80 (the program learns the real width, and any change, from the
// terminal itself).
func widthOf(out any) int {
	if f, ok := out.(*os.File); ok {
		if w, _, err := term.GetSize(f.Fd()); err == nil && w > 0 {
			return w
		}
	}
	return 80
}

// terminal is the frontend of the terminal program.
type terminal struct {
	p   *tea.Program
	r   *Renderer
	out *outbox
}

type (
	openedMsg struct{}
	busyMsg   struct{ on bool }
	askMsg    struct{ q *pendingQuestion }
	askEndMsg struct{ q *pendingQuestion }
	doneMsg   struct{}
)

// pendingQuestion is a question on screen and where its answer goes.
type pendingQuestion struct {
	question
	reply chan sdk.PermissionOption // buffered: the model never blocks
}

func (t *terminal) opened() {
	t.out.sync()
	t.p.Send(openedMsg{})
}

func (t *terminal) busy(on bool) {
	t.out.sync()
	t.p.Send(busyMsg{on})
}

// ask shows q below what is drawn (after its card's header) and waits for
// a key that picks an option; the answer is then printed after the
// question.
func (t *terminal) ask(ctx context.Context, q question, cancel <-chan struct{}) (sdk.PermissionOption, bool) {
	t.out.sync()
	pq := &pendingQuestion{question: q, reply: make(chan sdk.PermissionOption, 1)}
	t.p.Send(askMsg{pq})
	select {
	case o := <-pq.reply:
		t.r.Notice("%s → %s", q.text(), tools.CleanTerminalText(o.Name))
		return o, true
	case <-cancel:
	case <-ctx.Done():
	}
	t.p.Send(askEndMsg{pq})
	return sdk.PermissionOption{}, false
}

// Pastes longer than this many characters, or of more lines, or holding a
// tab, stand in the input as a placeholder and are sent verbatim.
const (
	pasteInlineChars = 1000
	pasteInlineLines = 10
)

// terminalModel is the terminal program: the line being drawn, the plan,
// a spinner while a turn runs, a question or the input editor, and a line
// of key hints.
type terminalModel struct {
	r       *Renderer
	ed      *editor
	frame   int  // the spinner's
	ticking bool // a spinner tick is on its way
	hist    *history
	it      *interrupter
	prompts chan<- string
	width   int

	browse int    // the history entry shown (len(entries): none)
	draft  string // what was typed before browsing
	pastes map[string]string

	open    bool // the session is open: Enter sends
	busy    bool
	since   time.Time
	ended   bool // the input ended (Ctrl-D)
	q       *pendingQuestion
	refusal string
	hint    string

	quitting bool
}

func newTerminalModel(r *Renderer, h *history, it *interrupter, prompts chan<- string, width int) *terminalModel {
	return &terminalModel{
		r: r, ed: newEditor(), hist: h, it: it, prompts: prompts, width: width,
		browse: len(h.entries), pastes: map[string]string{},
	}
}

// spinnerFrames are the spinner's frames, one every spinnerEvery.
var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

const spinnerEvery = 100 * time.Millisecond

type tickMsg struct{}

func tick() tea.Cmd {
	return tea.Tick(spinnerEvery, func(time.Time) tea.Msg { return tickMsg{} })
}

// PromptMarker starts the input line.
const PromptMarker = "> "

func (m *terminalModel) Init() tea.Cmd { return nil }

func (m *terminalModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		if msg.Width > 0 {
			m.width = msg.Width
			m.r.SetWidth(msg.Width)
		}
	case tea.KeyPressMsg:
		return m, m.key(msg)
	case tea.PasteMsg:
		m.paste(msg.Content)
	case tea.InterruptMsg:
		return m, m.interrupt()
	case openedMsg:
		m.open = true
	case busyMsg:
		return m, m.setBusy(msg.on)
	case askMsg:
		m.q, m.refusal = msg.q, ""
	case askEndMsg:
		if m.q == msg.q {
			m.q = nil
		}
	case doneMsg:
		m.quitting = true // the last view drawn is empty
		return m, tea.Quit
	case tickMsg:
		m.ticking = false
		return m, m.spin()
	}
	return m, nil
}

// setBusy starts or stops the spinner.
func (m *terminalModel) setBusy(on bool) tea.Cmd {
	was := m.busy
	m.busy = on
	if !on {
		m.hint = ""
		return nil
	}
	if !was {
		m.since = time.Now()
	}
	return m.spin()
}

// spin advances the spinner and asks for the next frame while busy.
func (m *terminalModel) spin() tea.Cmd {
	if !m.busy || m.ticking {
		return nil
	}
	m.frame = (m.frame + 1) % len(spinnerFrames)
	m.ticking = true
	return tick()
}

// key handles a key press: a question takes it first; then the keys of
// the chat (Ctrl-C, Ctrl-D, Ctrl-L, Enter, history); the rest edit.
func (m *terminalModel) key(k tea.KeyPressMsg) tea.Cmd {
	s := k.String()
	if s == "ctrl+c" {
		return m.interrupt()
	}
	if m.q != nil {
		m.answer(k)
		return nil
	}
	switch s {
	case "ctrl+d":
		if m.ed.empty() {
			m.endInput()
			return nil
		}
	case "ctrl+l":
		return tea.ClearScreen
	case "enter":
		return m.submit()
	case "up":
		if m.ed.onFirstLine() && m.recall(-1) {
			return nil
		}
	case "down":
		if m.ed.onLastLine() && m.recall(+1) {
			return nil
		}
	}
	if m.ed.edit(s, k.Text) {
		m.hint = ""
	}
	return nil
}

// interrupt is Ctrl-C: a second within the window quits; else it cancels
// the running turn (and the question, with it), or clears the input.
func (m *terminalModel) interrupt() tea.Cmd {
	if m.it.press() {
		m.hint = "quitting…"
		return nil
	}
	if m.busy {
		return nil // the chat cancels the turn and says so
	}
	m.clearInput()
	m.hint = "Ctrl-C again within a second quits"
	return nil
}

// answer picks the option whose key was pressed; any other key is refused
// in place and the question stays.
func (m *terminalModel) answer(k tea.KeyPressMsg) {
	pressed := strings.ToLower(k.Text)
	if pressed == "" {
		pressed = k.String()
	}
	for i, c := range m.q.choices {
		if pressed == c.key || pressed == fmt.Sprint(i+1) {
			m.q.reply <- c.opt
			m.q, m.refusal = nil, ""
			return
		}
	}
	m.refusal = fmt.Sprintf("%s is not an option: press %s", pressed, m.q.keys())
}

func (m *terminalModel) endInput() {
	if m.ended {
		return
	}
	m.ended = true
	close(m.prompts)
	if m.busy {
		m.hint = "the chat ends after this turn"
	}
}

// submit sends the input as a prompt (placeholders of pastes replaced by
// what was pasted) and records it in the history.
func (m *terminalModel) submit() tea.Cmd {
	if m.ended {
		return nil
	}
	if !m.open {
		m.hint = "the agent is starting: Enter sends once it is ready"
		return nil
	}
	if m.busy {
		m.hint = "the agent is working: Enter sends once it is done (Ctrl-C cancels)"
		return nil
	}
	shown := m.ed.value()
	text := m.expand(shown)
	if strings.TrimSpace(text) == "" {
		return nil
	}
	m.hist.add(text)
	m.r.UserPrompt(shown)
	m.clearInput()
	m.prompts <- text
	return m.setBusy(true)
}

func (m *terminalModel) clearInput() {
	m.ed.reset()
	m.pastes = map[string]string{}
	m.browse, m.draft = len(m.hist.entries), ""
}

// recall shows the previous (dir -1) or next (+1) history entry; it
// reports whether there was one. Past the newest comes what was typed.
func (m *terminalModel) recall(dir int) bool {
	n := len(m.hist.entries)
	to := m.browse + dir
	if to < 0 || to > n || m.browse == n && dir > 0 {
		return false
	}
	if m.browse == n {
		m.draft = m.expand(m.ed.value())
	}
	m.browse = to
	m.pastes = map[string]string{}
	if to == n {
		m.setInput(m.draft)
	} else {
		m.setInput(m.hist.entries[to])
	}
	return true
}

// setInput puts text in the editor, a long one behind a placeholder.
func (m *terminalModel) setInput(text string) {
	m.ed.reset()
	if long(text) {
		text = m.placeholder(text)
	}
	m.ed.insert(text)
}

// paste inserts pasted text: short text as typed, long text behind a
// placeholder that stands for it verbatim.
func (m *terminalModel) paste(content string) {
	content = strings.ReplaceAll(content, "\r\n", "\n")
	content = strings.ReplaceAll(content, "\r", "\n")
	if m.q != nil {
		m.refusal = "a paste is not an answer: press " + m.q.keys()
		return
	}
	if long(content) {
		content = m.placeholder(content)
	}
	m.ed.insert(content)
}

func long(s string) bool {
	return len([]rune(s)) > pasteInlineChars || strings.Count(s, "\n") >= pasteInlineLines || strings.ContainsRune(s, '\t')
}

func (m *terminalModel) placeholder(content string) string {
	ph := fmt.Sprintf("[pasted %d characters, %d lines #%d]", len([]rune(content)), strings.Count(content, "\n")+1, len(m.pastes)+1)
	m.pastes[ph] = content
	return ph
}

// expand replaces each paste's placeholder by what was pasted.
func (m *terminalModel) expand(s string) string {
	for ph, content := range m.pastes {
		s = strings.Replace(s, ph, content, 1)
	}
	return s
}

func (m *terminalModel) View() tea.View {
	if m.quitting {
		return tea.NewView("")
	}
	var parts []string
	if p := m.r.Pending(); p != "" {
		lines := strings.Split(wrap(p, m.width, ""), "\n")
		if len(lines) > 6 {
			lines = lines[len(lines)-6:]
		}
		parts = append(parts, lines...)
	}
	parts = append(parts, m.r.Plan()...)
	st := m.r.st
	switch {
	case m.q != nil:
		parts = append(parts, wrap(st.yellow+"? "+m.q.text()+st.reset, m.width, "  "))
		cue := "  press " + m.q.keys() + " ›"
		if m.refusal != "" {
			cue = "  " + st.red + m.refusal + st.reset + " ›"
		}
		parts = append(parts, truncate(cue, m.width))
	default:
		if m.busy {
			parts = append(parts, truncate(m.status(), m.width))
		}
		parts = append(parts, m.ed.view(m.width, PromptMarker, "a prompt, or !command", st))
		parts = append(parts, truncate(st.dim+m.keysHint()+st.reset, m.width))
	}
	return tea.NewView(strings.Join(parts, "\n"))
}

// status is the spinner line: what runs and for how long.
func (m *terminalModel) status() string {
	what, since := m.r.Running()
	if what == "" {
		what, since = "thinking", m.since
	} else {
		what = "running " + what
	}
	return spinnerFrames[m.frame] + " " + what + " · " + elapsed(time.Since(since))
}

func (m *terminalModel) keysHint() string {
	if m.hint != "" {
		return m.hint
	}
	if !m.open {
		return "starting the agent…"
	}
	if m.busy {
		return "Ctrl-C cancels · Ctrl-C twice quits"
	}
	return "Enter sends · Ctrl-J new line · ↑ history · Ctrl-L clears · Ctrl-D quits"
}

// elapsed is d in whole seconds ("7s", "2m05s").
func elapsed(d time.Duration) string {
	s := int(d.Seconds())
	if s < 60 {
		return fmt.Sprintf("%ds", s)
	}
	return fmt.Sprintf("%dm%02ds", s/60, s%60)
}
