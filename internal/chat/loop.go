package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// chat is one running conversation: the connection, the drawing, the
// user's input and the agent process.
type chat struct {
	conn  *sdk.ClientSideConnection
	r     *Renderer
	in    *input
	cl    *client
	o     Options
	agent *agentProc

	sid           sdk.SessionId
	lastInterrupt time.Time
}

// run opens the session, then sends one prompt per line until the input
// ends or the user interrupts twice.
func (c *chat) run(ctx context.Context) error {
	if err := c.open(ctx); err != nil {
		return err
	}
	for {
		line, ok := c.next(ctx)
		if !ok {
			return nil
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		quit, err := c.turn(ctx, line)
		if err != nil || quit {
			return err
		}
	}
}

// open initializes the agent, creates or loads the session and prints the
// banner.
func (c *chat) open(ctx context.Context) error {
	caps := sdk.ClientCapabilities{Meta: map[string]any{"terminal_output": true}}
	if _, err := c.conn.Initialize(ctx, sdk.InitializeRequest{
		ProtocolVersion:    sdk.ProtocolVersionNumber,
		ClientCapabilities: caps,
		ClientInfo:         &sdk.Implementation{Name: "dsh-acp chat", Version: "1"},
	}); err != nil {
		return c.failed("the agent did not start", err)
	}
	var (
		modes *sdk.SessionModeState
		opts  []sdk.SessionConfigOption
	)
	if c.o.Resume != "" {
		resp, err := c.conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: sdk.SessionId(c.o.Resume), Cwd: c.o.Cwd, McpServers: []sdk.McpServer{}})
		if err != nil {
			return c.failed("cannot resume session "+c.o.Resume, err)
		}
		c.sid, modes, opts = sdk.SessionId(c.o.Resume), resp.Modes, resp.ConfigOptions
		c.r.EndTurn(sdk.StopReasonEndTurn) // the replayed history ends here
	} else {
		resp, err := c.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: c.o.Cwd, McpServers: []sdk.McpServer{}})
		if err != nil {
			return c.failed("cannot open a session", err)
		}
		c.sid, modes, opts = resp.SessionId, resp.Modes, resp.ConfigOptions
	}
	model, mode, sandbox := c.o.Model, "", c.o.Sandbox
	if modes != nil {
		mode = string(modes.CurrentModeId)
	}
	for _, o := range opts {
		s := o.Select
		switch {
		case s == nil:
		case s.Id == "sandbox":
			sandbox = string(s.CurrentValue)
		case s.Category == nil:
		case *s.Category == sdk.SessionConfigOptionCategoryMode:
			mode = string(s.CurrentValue)
		case *s.Category == sdk.SessionConfigOptionCategoryModel:
			model = string(s.CurrentValue)
		}
	}
	c.r.Banner(fact("model", model), fact("mode", mode), fact("sandbox", sandbox), fact("session", string(c.sid)))
	return nil
}

func fact(name, value string) string {
	if value == "" {
		return ""
	}
	return name + " " + value
}

// failed is the error for a failed request: the agent's exit and last
// words when the agent is gone (a write to it broke, the connection closed
// or it exited: the SDK reports all of these as internal errors of its
// own), else the agent's answer.
func (c *chat) failed(what string, err error) error {
	var re *sdk.RequestError
	answered := errors.As(err, &re) && re.Code != -32603
	select {
	case <-c.conn.Done():
		return c.agent.failure(what, err)
	default:
	}
	if !answered && c.agent.died(time.Second) {
		return c.agent.failure(what, err)
	}
	return fmt.Errorf("%s: %s", what, errText(err))
}

// next is the next prompt: a line kept from a question, else the next
// line typed. At the prompt an interrupt discards the line (the terminal
// already did) and shows a fresh prompt; ok is false at the end of input
// or on a second interrupt within DoubleInterrupt.
func (c *chat) next(ctx context.Context) (line string, ok bool) {
	if line, ok := c.in.takeKept(); ok {
		c.lastInterrupt = time.Time{}
		if c.o.Interactive {
			c.r.Prompt()
			c.r.Kept(line) // not echoed here: typed earlier
		}
		return line, true
	}
	if c.o.Interactive {
		c.r.Prompt()
	}
	for {
		select {
		case line, ok := <-c.in.lines:
			if c.o.Interactive {
				c.r.Typed(!ok) // Ctrl-D leaves the cursor after the marker
			}
			c.lastInterrupt = time.Time{} // a line between two presses: not a double
			return line, ok
		case <-c.o.Interrupts:
			c.r.Typed(true)
			if c.doubleInterrupt() {
				c.r.Notice("interrupted twice: exiting")
				c.agent.quit = true
				return "", false
			}
			if c.o.Interactive {
				c.r.Prompt()
			}
		case <-ctx.Done():
			return "", false
		}
	}
}

// doubleInterrupt records an interrupt and reports whether it followed the
// previous one within DoubleInterrupt.
func (c *chat) doubleInterrupt() bool {
	now := time.Now()
	double := !c.lastInterrupt.IsZero() && now.Sub(c.lastInterrupt) <= c.o.DoubleInterrupt
	c.lastInterrupt = now
	return double
}

// turn sends one prompt and waits for its answer. An interrupt cancels the
// turn (session/cancel, and a pending question is answered cancelled);
// quit reports a second one within DoubleInterrupt. err is the agent's
// death.
func (c *chat) turn(ctx context.Context, text string) (quit bool, err error) {
	type answer struct {
		resp sdk.PromptResponse
		err  error
	}
	done := make(chan answer, 1)
	cancel := make(chan struct{})
	cancelled := false
	c.cl.setTurn(cancel)
	defer func() {
		c.cl.setTurn(nil)
		if !cancelled { // a question the agent gave up on must not take the next line
			close(cancel)
		}
	}()
	go func() {
		resp, err := c.conn.Prompt(ctx, sdk.PromptRequest{SessionId: c.sid, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
		done <- answer{resp, err}
	}()
	for {
		select {
		case a := <-done:
			if a.err != nil {
				err := c.failed("the prompt failed", a.err)
				if c.agent.died(0) {
					return true, err
				}
				c.r.Notice("error: %v", err)
				return false, nil
			}
			c.r.EndTurn(a.resp.StopReason)
			return false, nil
		case <-c.o.Interrupts:
			if c.doubleInterrupt() {
				c.r.Notice("interrupted twice: exiting")
				_ = c.conn.Cancel(ctx, sdk.CancelNotification{SessionId: c.sid})
				c.agent.quit = true
				return true, nil
			}
			if !cancelled {
				cancelled = true
				close(cancel)
			}
			c.r.Notice("cancelling… (Ctrl-C again within a second exits)")
			_ = c.conn.Cancel(ctx, sdk.CancelNotification{SessionId: c.sid})
		case <-ctx.Done():
			return true, nil
		}
	}
}

// errText is a request error as a person reads it: a JSON-RPC error's
// message and details, not its JSON.
func errText(err error) string {
	var re *sdk.RequestError
	if !errors.As(err, &re) {
		return err.Error()
	}
	text := re.Message
	if m, ok := re.Data.(map[string]any); ok {
		// -32603 and -32602 say what failed under "error"; auth-required
		// (-32000) says what to do under "message".
		for _, key := range []string{"error", "message"} {
			if d, ok := m[key].(string); ok && !strings.Contains(text, d) {
				text += ": " + d
			}
		}
	} else if re.Data != nil {
		if b, err := json.Marshal(re.Data); err == nil {
			text += ": " + string(b)
		}
	}
	return text
}
