package chat

import (
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
	// In supplies prompts (one per line unless Interactive); Out receives
	// the drawing.
	In  io.Reader
	Out io.Writer
	// Err receives the agent's stderr — its logs — and should be a file:
	// nothing the agent writes there reaches the drawing. LogPath names it
	// in messages ("" when it has no name).
	Err     io.Writer
	LogPath string
	Color   bool
	// Interactive means In and Out are the terminal the user types on and
	// reads: the chat is then a terminal program (an input editor, single
	// keys for questions, a spinner), drawing by lines wrapped at the
	// terminal's width. Ctrl-C clears the input, or cancels the running
	// turn; two within DoubleInterrupt (default 1 s) end the chat; Ctrl-D
	// on an empty input ends it once the running turn is over.
	Interactive bool
	// HistoryPath is the file of the prompts sent from the terminal,
	// across sessions ("" keeps none). It is created private (0600).
	HistoryPath string
	// Approve answers permission questions without asking: "" asks,
	// "allow" allows once, "reject" rejects.
	Approve string
	// Interrupts delivers SIGINT when not Interactive: one cancels the
	// running turn, two within DoubleInterrupt end the chat.
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

// Run spawns the agent, opens (or resumes) a session and sends each
// prompt, drawing the session as it goes. At the end of input (Ctrl-D) it
// waits for the running turn, then closes the agent and returns nil; two
// quick interrupts end it at once. When the agent fails to start or dies,
// the error says how it exited and ends with its last stderr lines.
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
	r.SetCwd(o.Cwd)
	it := newInterrupter(o.DoubleInterrupt)
	var runErr error
	if o.Interactive {
		runErr = runTerminal(ctx, o, a, r, it)
	} else {
		lines := readLines(o.In)
		forwardInterrupts(o.Interrupts, it)
		fe := &plain{r: r, lines: lines}
		_, runErr = converse(ctx, o, a, r, fe, inputs{prompts: lines, cancels: it.cancels, quit: it.quit})
		it.end()
	}
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

// converse connects to the agent and runs the chat until the input ends,
// the user quits or the agent dies; sid is the session's id ("" if none
// was opened).
func converse(ctx context.Context, o Options, a *agentProc, r *Renderer, fe frontend, in inputs) (sid sdk.SessionId, err error) {
	cl := &client{r: r, fe: fe, approve: o.Approve}
	conn := sdk.NewClientSideConnection(cl, a.stdin, a.stdout)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	ch := &chat{conn: conn, r: r, in: in, fe: fe, cl: cl, o: o, agent: a}
	err = ch.run(ctx)
	return ch.sid, err
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
