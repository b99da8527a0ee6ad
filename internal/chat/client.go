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
	// In supplies prompts, one per line; Out receives the drawing; Err the
	// agent's stderr.
	In       io.Reader
	Out, Err io.Writer
	Color    bool
	// Approve answers permission questions without asking: "" asks on In,
	// "allow" allows once, "reject" rejects.
	Approve string
	// Interrupts delivers Ctrl-C presses: the first cancels the running
	// turn, a second within the same turn exits.
	Interrupts <-chan os.Signal
}

// Run spawns the agent, opens a session and sends each input line as a
// prompt, drawing the session as it goes. At the end of input it waits for
// the running turn, then closes the agent and returns nil.
func Run(ctx context.Context, o Options) error {
	if len(o.Agent) == 0 {
		return errors.New("no agent command")
	}
	cmd := exec.Command(o.Agent[0], o.Agent[1:]...)
	cmd.Env = o.Env
	cmd.Stderr = o.Err
	// The agent must not receive the terminal's Ctrl-C: the chat turns it
	// into session/cancel.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	toAgent, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	fromAgent, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start agent: %w", err)
	}
	lines := readLines(o.In)
	r := NewRenderer(o.Out, o.Color)
	cl := &client{r: r, lines: lines, approve: o.Approve}
	conn := sdk.NewClientSideConnection(cl, toAgent, fromAgent)
	conn.SetLogger(slog.New(slog.DiscardHandler))

	runErr := converse(ctx, conn, r, lines, o)
	toAgent.Close()
	waitErr := waitBounded(cmd, 5*time.Second)
	if runErr != nil {
		return runErr
	}
	return waitErr
}

// converse runs the session: initialize, session/new, one prompt per line.
func converse(ctx context.Context, conn *sdk.ClientSideConnection, r *Renderer, lines <-chan string, o Options) error {
	caps := sdk.ClientCapabilities{Meta: map[string]any{"terminal_output": true}}
	if _, err := conn.Initialize(ctx, sdk.InitializeRequest{
		ProtocolVersion:    sdk.ProtocolVersionNumber,
		ClientCapabilities: caps,
		ClientInfo:         &sdk.Implementation{Name: "dsh-acp chat", Version: "1"},
	}); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	sess, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: o.Cwd, McpServers: []sdk.McpServer{}})
	if err != nil {
		return fmt.Errorf("session/new: %w", err)
	}
	for line := range lines {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if quit := promptOnce(ctx, conn, r, sess.SessionId, line, o.Interrupts); quit {
			return nil
		}
	}
	return nil
}

// promptOnce sends one prompt and waits for its answer, turning a first
// interrupt into session/cancel; true means a second interrupt asked to quit.
func promptOnce(ctx context.Context, conn *sdk.ClientSideConnection, r *Renderer, id sdk.SessionId, text string, interrupts <-chan os.Signal) (quit bool) {
	type answer struct {
		resp sdk.PromptResponse
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
		done <- answer{resp, err}
	}()
	cancelled := false
	for {
		select {
		case a := <-done:
			if a.err != nil {
				r.Notice("error: %v", a.err)
				return false
			}
			r.EndTurn(a.resp.StopReason)
			return false
		case <-interrupts:
			if cancelled {
				r.Notice("interrupted again: exiting")
				return true
			}
			cancelled = true
			r.Notice("cancelling… (Ctrl-C again to exit)")
			_ = conn.Cancel(ctx, sdk.CancelNotification{SessionId: id})
		case <-ctx.Done():
			return true
		}
	}
}

// readLines delivers in's lines on a channel closed at end of input.
func readLines(in io.Reader) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

// waitBounded waits for the agent to exit after its stdin closed, killing
// it if it does not.
func waitBounded(cmd *exec.Cmd, limit time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("agent did not exit within %s of its input closing", limit)
	}
}

// client answers the agent's requests.
type client struct {
	r       *Renderer
	lines   <-chan string
	approve string
	mu      sync.Mutex
}

func (c *client) SessionUpdate(ctx context.Context, n sdk.SessionNotification) error {
	c.r.Update(n.Update)
	return nil
}

// RequestPermission asks the user (or answers per Options.Approve).
func (c *client) RequestPermission(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	title := ""
	if p.ToolCall.Title != nil {
		title = *p.ToolCall.Title
	}
	pick := func(kind sdk.PermissionOptionKind) sdk.RequestPermissionResponse {
		for _, o := range p.Options {
			if o.Kind == kind {
				return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected(o.OptionId)}
			}
		}
		return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeCancelled()}
	}
	switch c.approve {
	case "allow":
		c.r.Notice("allowing %s", title)
		return pick(sdk.PermissionOptionKindAllowOnce), nil
	case "reject":
		c.r.Notice("rejecting %s", title)
		return pick(sdk.PermissionOptionKindRejectOnce), nil
	}
	c.r.Notice("run %q? [y]es once / [a]lways / [n]o", title)
	select {
	case line, ok := <-c.lines:
		if !ok {
			return pick(sdk.PermissionOptionKindRejectOnce), nil
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return pick(sdk.PermissionOptionKindAllowOnce), nil
		case "a", "always":
			return pick(sdk.PermissionOptionKindAllowAlways), nil
		}
		return pick(sdk.PermissionOptionKindRejectOnce), nil
	case <-ctx.Done():
		return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeCancelled()}, nil
	}
}

func (c *client) ReadTextFile(ctx context.Context, p sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, sdk.NewMethodNotFound("fs/read_text_file")
}

func (c *client) WriteTextFile(ctx context.Context, p sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, sdk.NewMethodNotFound("fs/write_text_file")
}

func (c *client) CreateTerminal(ctx context.Context, p sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, sdk.NewMethodNotFound("terminal/create")
}

func (c *client) KillTerminal(ctx context.Context, p sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, sdk.NewMethodNotFound("terminal/kill")
}

func (c *client) TerminalOutput(ctx context.Context, p sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, sdk.NewMethodNotFound("terminal/output")
}

func (c *client) ReleaseTerminal(ctx context.Context, p sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, sdk.NewMethodNotFound("terminal/release")
}

func (c *client) WaitForTerminalExit(ctx context.Context, p sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, sdk.NewMethodNotFound("terminal/wait_for_exit")
}
