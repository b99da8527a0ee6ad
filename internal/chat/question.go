package chat

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/tools"
)

// client answers the agent's requests: session updates are drawn,
// permission questions put to the user by the frontend.
type client struct {
	r       *Renderer
	fe      frontend
	approve string

	ask  sync.Mutex // one question at a time
	mu   sync.Mutex
	turn chan struct{} // closed when the running turn is cancelled
}

// setTurn names the running turn's cancel channel (nil between turns).
func (c *client) setTurn(cancel chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.turn = cancel
}

func (c *client) cancelled() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.turn // a nil channel never fires
}

func (c *client) SessionUpdate(ctx context.Context, n sdk.SessionNotification) error {
	c.r.Update(n.Update)
	return nil
}

// choice is one option of a permission question and the key that picks it.
type choice struct {
	key string
	opt sdk.PermissionOption
}

// optionKey is the letter of the first option of a kind ("" for a kind
// without one). Switches, not package-level maps, here and in answerWord:
// the daemon, the same binary, would build the maps at every start.
func optionKey(kind sdk.PermissionOptionKind) string {
	switch kind {
	case sdk.PermissionOptionKindAllowOnce:
		return "y"
	case sdk.PermissionOptionKindAllowAlways:
		return "a"
	case sdk.PermissionOptionKindRejectOnce:
		return "n"
	case sdk.PermissionOptionKindRejectAlways:
		return "r"
	}
	return ""
}

// answerWord is the kind whose first option a word picks (yes, always,
// no), and whether it is one.
func answerWord(word string) (sdk.PermissionOptionKind, bool) {
	switch word {
	case "yes":
		return sdk.PermissionOptionKindAllowOnce, true
	case "always":
		return sdk.PermissionOptionKindAllowAlways, true
	case "no":
		return sdk.PermissionOptionKindRejectOnce, true
	}
	return "", false
}

// choicesOf keys exactly the options the agent offered: the first option
// of a kind by its letter (y, a, n, r), any other by its number.
func choicesOf(opts []sdk.PermissionOption) []choice {
	seen := map[sdk.PermissionOptionKind]bool{}
	out := make([]choice, len(opts))
	for i, o := range opts {
		key := strconv.Itoa(i + 1)
		if k := optionKey(o.Kind); k != "" && !seen[o.Kind] {
			key = k
		}
		seen[o.Kind] = true
		out[i] = choice{key: key, opt: o}
	}
	return out
}

// match finds the option an answer picks: its key, its number, or yes /
// always / no for the first option of that kind.
func match(choices []choice, answer string) (sdk.PermissionOption, bool) {
	a := strings.ToLower(strings.TrimSpace(answer))
	for i, c := range choices {
		if a == c.key || a == strconv.Itoa(i+1) {
			return c.opt, true
		}
	}
	if kind, ok := answerWord(a); ok {
		return firstOf(choices, kind)
	}
	return sdk.PermissionOption{}, false
}

func firstOf(choices []choice, kind sdk.PermissionOptionKind) (sdk.PermissionOption, bool) {
	for _, c := range choices {
		if c.opt.Kind == kind {
			return c.opt, true
		}
	}
	return sdk.PermissionOption{}, false
}

// question is a permission question: the call it is about and the
// options offered, each with its key.
type question struct {
	title   string
	choices []choice
}

// text is the line that asks: what would run, then each choice.
func (q question) text() string {
	parts := make([]string, len(q.choices))
	for i, c := range q.choices {
		parts[i] = fmt.Sprintf("[%s] %s", c.key, tools.CleanTerminalText(c.opt.Name))
	}
	return fmt.Sprintf("allow %q? %s", tools.CleanTerminalText(firstLine(q.title)), strings.Join(parts, "  "))
}

// keys is the offered keys as a person reads them: "y, a or n".
func (q question) keys() string {
	keys := make([]string, len(q.choices))
	for i, c := range q.choices {
		keys[i] = c.key
	}
	if len(keys) == 1 {
		return keys[0]
	}
	return strings.Join(keys[:len(keys)-1], ", ") + " or " + keys[len(keys)-1]
}

func selected(o sdk.PermissionOption) sdk.RequestPermissionResponse {
	return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected(o.OptionId)}
}

func cancelledOutcome() sdk.RequestPermissionResponse {
	return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeCancelled()}
}

// RequestPermission asks the user (or answers per Options.Approve),
// offering only the options the agent offered, after the call's card
// header (drawn here if the card's own update has not come yet). A
// cancelled turn answers cancelled, and so does a question nobody
// answered when the agent offers no reject option.
func (c *client) RequestPermission(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	c.ask.Lock()
	defer c.ask.Unlock()
	title := "this call"
	if p.ToolCall.Title != nil {
		title = *p.ToolCall.Title
	}
	choices := choicesOf(p.Options)
	if len(choices) == 0 {
		c.r.Notice("the agent asked about %q without options: cancelling", firstLine(title))
		return cancelledOutcome(), nil
	}
	switch c.approve {
	case "allow", "reject":
		kind := sdk.PermissionOptionKindAllowOnce
		if c.approve == "reject" {
			kind = sdk.PermissionOptionKindRejectOnce
		}
		o, ok := firstOf(choices, kind)
		if !ok {
			c.r.Notice("--approve %s: the agent offers no %s option for %q: cancelling", c.approve, kind, firstLine(title))
			return cancelledOutcome(), nil
		}
		c.r.Notice("%s: %s", tools.CleanTerminalText(o.Name), tools.CleanTerminalText(firstLine(title)))
		return selected(o), nil
	}
	c.r.OpenCard(p.ToolCall)
	o, ok := c.fe.ask(ctx, question{title: title, choices: choices}, c.cancelled())
	if !ok {
		return cancelledOutcome(), nil
	}
	return selected(o), nil
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
