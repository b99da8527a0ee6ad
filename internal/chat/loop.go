package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// inputs drive a chat: the prompts (closed at the end of input), requests
// to cancel the running turn (one value each; any left from before a turn
// are dropped when it starts) and quit, closed to end the chat at once.
type inputs struct {
	prompts <-chan string
	cancels <-chan struct{}
	quit    <-chan struct{}
}

// frontend is the chat's face: how it asks permission questions and
// learns that a turn runs.
type frontend interface {
	// opened reports that the session is open (its banner drawn).
	opened()
	// busy reports that a turn started (true) or ended (false).
	busy(on bool)
	// ask puts q to the user and returns the option picked; ok is false
	// when no option was (end of input, cancelled turn, ctx done).
	ask(ctx context.Context, q question, cancel <-chan struct{}) (opt sdk.PermissionOption, ok bool)
}

// interrupter turns interrupts (Ctrl-C) into cancel requests, and two
// within window into quit.
type interrupter struct {
	window  time.Duration
	cancels chan struct{}
	quit    chan struct{}

	mu   sync.Mutex
	last time.Time
	once sync.Once
}

func newInterrupter(window time.Duration) *interrupter {
	return &interrupter{window: window, cancels: make(chan struct{}, 1), quit: make(chan struct{})}
}

// press records an interrupt; it reports whether it quit (it followed the
// previous one within the window). Otherwise a cancel request is queued.
func (it *interrupter) press() (quit bool) {
	it.mu.Lock()
	now := time.Now()
	double := !it.last.IsZero() && now.Sub(it.last) <= it.window
	it.last = now
	it.mu.Unlock()
	if double {
		it.end()
		return true
	}
	select {
	case it.cancels <- struct{}{}:
	default:
	}
	return false
}

// end closes quit (once).
func (it *interrupter) end() { it.once.Do(func() { close(it.quit) }) }

// chat is one running conversation: the connection, the drawing, the
// user's input and the agent process.
type chat struct {
	conn  *sdk.ClientSideConnection
	r     *Renderer
	in    inputs
	fe    frontend
	cl    *client
	o     Options
	agent *agentProc

	sid sdk.SessionId
}

// run opens the session, then sends each prompt until the input ends or
// the user quits.
func (c *chat) run(ctx context.Context) error {
	if err := c.open(ctx); err != nil {
		return err
	}
	c.fe.opened()
	for {
		var (
			line string
			ok   bool
		)
		select {
		case line, ok = <-c.in.prompts:
		case <-c.in.quit:
			c.r.Notice("interrupted twice: exiting")
			c.agent.quit = true
			return nil
		case <-ctx.Done():
			return nil
		}
		if !ok {
			return nil
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		c.fe.busy(true)
		quit, err := c.turn(ctx, line)
		c.fe.busy(false)
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
	facts := []string{fact("model", model), fact("mode", mode), fact("sandbox", sandbox), fact("session", string(c.sid))}
	if c.o.Interactive {
		c.r.Banner(facts) // the keys are shown below the input
	} else {
		c.r.Banner(facts, "Ctrl-D quits, Ctrl-C cancels")
	}
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

// turn sends one prompt and waits for its answer. A cancel request
// cancels the turn (session/cancel, and a pending question is answered
// cancelled); quit ends it and reports quit. err is the agent's death.
func (c *chat) turn(ctx context.Context, text string) (quit bool, err error) {
	type answer struct {
		resp sdk.PromptResponse
		err  error
	}
	for drained := false; !drained; { // requests from before this turn
		select {
		case <-c.in.cancels:
		default:
			drained = true
		}
	}
	done := make(chan answer, 1)
	cancel := make(chan struct{})
	cancelled := false
	c.cl.setTurn(cancel)
	defer func() {
		c.cl.setTurn(nil)
		if !cancelled { // a question the agent gave up on must not wait on
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
		case <-c.in.quit:
			c.r.Notice("interrupted twice: exiting")
			_ = c.conn.Cancel(ctx, sdk.CancelNotification{SessionId: c.sid})
			c.agent.quit = true
			return true, nil
		case <-c.in.cancels:
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
