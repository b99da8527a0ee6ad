package acp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/internal/configoption"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/permission"
	"github.com/dsh-acp/dsh-acp/internal/sandboxlevel"
	"github.com/dsh-acp/dsh-acp/internal/slash"
)

// Slash commands (internal/slash: the list, parsing, the pure texts) are
// answered by the daemon: advertised right after the session/new and
// session/load replies (see Server.opened), journaled as a Command event
// and its Info answer, and never sent to the model.

// command runs a slash command as a turn of the session. Without a model
// in force, /compact and an unknown command answer why they cannot run.
func (ss *session) command(ctx context.Context, name, args, text string, extra int) event.StopReason {
	if name == "compact" && ss.hasModel() {
		return ss.agent.Compact(ctx, text)
	}
	if name == "undo" && ss.tracker != nil {
		return ss.agent.Command(ctx, text, func(ctx context.Context) string { return ss.tracker.Undo(ctx, args) })
	}
	return ss.agent.Command(ctx, text, func(context.Context) string {
		reply := ss.commandReply(name, args)
		if extra > 0 {
			reply += fmt.Sprintf("(Commands take no attachments: %d attached item(s) were not used.)\n\n", extra)
		}
		return reply
	})
}

func (ss *session) commandReply(name, args string) string {
	switch name {
	case "model":
		if args == "" {
			return ss.modelsText()
		}
		if err := ss.setSetting(configoption.ModelID, args); err != nil {
			return errorText(err) + "\n\n"
		}
		return fmt.Sprintf("Model: %s (context window %s tokens).\n\n", args, slash.Thousands(ss.window(args)))
	case "thinking":
		if args == "" {
			return ss.thinkingText()
		}
		if err := ss.setSetting(configoption.ThinkingID, args); err != nil {
			return errorText(err) + "\n\n"
		}
		return "Thinking: " + ss.agent.Thinking().Label() + ".\n\n"
	case "mode":
		if args == "" {
			return modeText(ss.policy.Mode())
		}
		if err := ss.setSetting(configoption.ModeID, args); err != nil {
			return errorText(err) + "\n\n"
		}
		mode := ss.policy.Mode()
		return fmt.Sprintf("Permission mode: %s — %s.\n\n", mode, configoption.DescribeMode(mode))
	case "sandbox":
		if args == "" {
			return ss.sandboxText()
		}
		if err := ss.setSetting(sandboxlevel.ConfigID, args); err != nil {
			return errorText(err) + "\n\n"
		}
		level := ss.agent.Sandbox()
		return fmt.Sprintf("Sandbox: %s — %s.\n\n", level, sandboxlevel.Describe(level))
	case "usage":
		return slash.Usage(ss.agent.Usage())
	case "allow-project":
		return ss.allowProjectReply(args)
	case "compact":
		return noKeyText
	case slash.Unknown:
		return fmt.Sprintf("/%s is not a command of dsh-acp. %s", args, noKeyText) + slash.Help()
	default:
		return slash.Help()
	}
}

// allowProjectReply saves rule for the project (approval.AllowProject):
// the user typed it, so it is the only way a rule is written into the
// repository.
func (ss *session) allowProjectReply(rule string) string {
	saved, path, err := ss.policy.AllowProject(rule)
	if err != nil {
		return fmt.Sprintf("Nothing saved: %v.\n\n", err)
	}
	return fmt.Sprintf("Always allowed in this project: `%s` (saved to %s; also in force for this session).\n\n", saved, path)
}

func modeText(current permission.Mode) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Permission mode: %s. Switch with /mode NAME:\n", current)
	for _, m := range permission.Modes() {
		mark := " "
		if m == current {
			mark = "*"
		}
		fmt.Fprintf(&b, "%s %s — %s\n", mark, m, configoption.DescribeMode(m))
	}
	return b.String() + "\n"
}

// errorText is the message of an error meant for the user (an
// invalidParams's text without its prefix).
func errorText(err error) string {
	var re *sdk.RequestError
	if errors.As(err, &re) {
		if d, ok := re.Data.(map[string]any); ok {
			if msg, ok := d["error"].(string); ok {
				return msg
			}
		}
		return re.Message
	}
	return err.Error()
}
