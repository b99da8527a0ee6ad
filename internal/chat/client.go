package chat

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// Options configure a chat.
type Options struct {
	// Agent is the agent's command line (program first).
	Agent []string
	// Env is the agent's environment (nil: inherit).
	Env []string
	// Cwd is the session's working directory (absolute).
	Cwd string
	// In supplies prompts, one per line; Out receives the drawing.
	In  io.Reader
	Out io.Writer
	// Err receives the agent's stderr — its logs — and should be a file:
	// nothing the agent writes there reaches the drawing. LogPath names it
	// in messages ("" when it has no name).
	Err     io.Writer
	LogPath string
	Color   bool
	// Interactive means In is a terminal the user types on: the prompt
	// marker is shown where the chat waits for a line, and a Ctrl-C at the
	// prompt (the terminal already discarded the line) shows a fresh one.
	Interactive bool
	// Approve answers permission questions without asking: "" asks on In,
	// "allow" allows once, "reject" rejects.
	Approve string
	// Interrupts delivers Ctrl-C presses: at the prompt one clears the
	// line, during a turn one cancels it, and two within DoubleInterrupt
	// (default 1 s) end the chat.
	Interrupts      <-chan os.Signal
	DoubleInterrupt time.Duration
	// Resume, when set, is the id of a session to continue (session/load,
	// which draws its history) instead of a new one.
	Resume string
	// Model and Sandbox are shown in the banner ("" leaves them out); a
	// model option the agent announces wins over Model, a `sandbox` option
	// over Sandbox.
	Model, Sandbox string
}

// Run spawns the agent, opens (or resumes) a session and sends each input
// line as a prompt, drawing the session as it goes. At the end of input
// (Ctrl-D) it waits for the running turn, then closes the agent and returns
// nil; two quick interrupts end it at once. When the agent fails to start
// or dies, the error says how it exited and ends with its last stderr lines.
func Run(ctx context.Context, o Options) error {
	if len(o.Agent) == 0 {
		return errors.New("no agent command")
	}
	if o.DoubleInterrupt <= 0 {
		o.DoubleInterrupt = time.Second
	}
	a, err := startAgent(o)
	if err != nil {
		return err
	}
	r := NewRenderer(o.Out, o.Color)
	in := newInput(o.In)
	cl := &client{r: r, in: in, approve: o.Approve, interactive: o.Interactive}
	conn := sdk.NewClientSideConnection(cl, a.stdin, a.stdout)
	conn.SetLogger(slog.New(slog.DiscardHandler))

	ch := &chat{conn: conn, r: r, in: in, cl: cl, o: o, agent: a}
	runErr := ch.run(ctx)
	_ = a.stdin.Close()
	waitErr := a.waitBounded(5 * time.Second)
	if runErr != nil {
		return runErr
	}
	if waitErr != nil && !a.quit {
		return a.failure("the agent failed on exit", waitErr)
	}
	return nil
}

// agentProc is the spawned agent.
type agentProc struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stdout  *os.File
	tail    *tailWriter
	logPath string
	exited  chan struct{}
	err     error // Wait's, once exited is closed
	quit    bool  // the chat ended it (two interrupts): its exit is no failure
}

func startAgent(o Options) (*agentProc, error) {
	cmd := exec.Command(o.Agent[0], o.Agent[1:]...)
	cmd.Env = o.Env
	a := &agentProc{cmd: cmd, tail: &tailWriter{max: 4 << 10}, logPath: o.LogPath, exited: make(chan struct{})}
	cmd.Stderr = a.tail
	if o.Err != nil {
		cmd.Stderr = io.MultiWriter(o.Err, a.tail)
	}
	// The agent must not receive the terminal's Ctrl-C: the chat turns it
	// into session/cancel.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// A pipe of our own, not StdoutPipe: Wait must not close it while the
	// connection still reads the agent's last lines.
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = pw
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, fmt.Errorf("start agent %s: %w", o.Agent[0], err)
	}
	pw.Close()
	a.stdin, a.stdout = stdin, pr
	go func() {
		a.err = cmd.Wait()
		close(a.exited)
	}()
	return a, nil
}

// waitBounded waits for the agent to exit after its stdin closed, killing
// it if it does not.
func (a *agentProc) waitBounded(limit time.Duration) error {
	select {
	case <-a.exited:
	case <-time.After(limit):
		_ = a.cmd.Process.Kill()
		<-a.exited
		a.stdout.Close()
		return fmt.Errorf("agent did not exit within %s of its input closing", limit)
	}
	a.stdout.Close()
	return a.err
}

// died reports, waiting up to limit, whether the agent exited.
func (a *agentProc) died(limit time.Duration) bool {
	select {
	case <-a.exited:
		return true
	default:
	}
	if limit <= 0 {
		return false
	}
	select {
	case <-a.exited:
		return true
	case <-time.After(limit):
		return false
	}
}

// failure explains a failed exchange with the agent: when the agent exited
// (waiting a little for it), how it exited and the end of its stderr, the
// real cause, instead of the connection's own error.
func (a *agentProc) failure(what string, err error) error {
	if !a.died(3 * time.Second) {
		return fmt.Errorf("%s: %w", what, err)
	}
	msg := what + ": the agent exited"
	if a.err != nil {
		msg += " (" + a.err.Error() + ")"
	}
	if t := a.tail.lines(8); t != "" {
		msg += ":\n" + t
	} else {
		msg += " without a word on stderr"
	}
	if a.logPath != "" {
		msg += "\n(its log: " + a.logPath + ")"
	}
	return errors.New(msg)
}

// tailWriter keeps the last max bytes written to it. Safe for concurrent
// use.
type tailWriter struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - w.max; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
	}
	return len(p), nil
}

// lines is the last n non-empty lines kept, each indented.
func (w *tailWriter) lines(n int) string {
	w.mu.Lock()
	text := string(w.buf)
	w.mu.Unlock()
	var keep []string
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) != "" {
			keep = append(keep, "  "+strings.TrimRight(l, "\r"))
		}
	}
	if len(keep) > n {
		keep = keep[len(keep)-n:]
	}
	return strings.Join(keep, "\n")
}

// input is the user's lines: a reader goroutine feeds them in order, and
// lines taken out of turn (type-ahead read while a question waited) are
// put back to come first.
type input struct {
	lines <-chan string

	mu   sync.Mutex
	kept []string
}

func newInput(in io.Reader) *input {
	ch := make(chan string)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return &input{lines: ch}
}

// keep queues line to be the next prompt (after those kept before it).
func (in *input) keep(line string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.kept = append(in.kept, line)
}

// takeKept returns the oldest kept line, if any.
func (in *input) takeKept() (string, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.kept) == 0 {
		return "", false
	}
	line := in.kept[0]
	in.kept = in.kept[1:]
	return line, true
}
