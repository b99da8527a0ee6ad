package acp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/permission"
)

// Slash commands are handled by the daemon: advertised with
// available_commands_update right after the session/new and session/load
// replies (see replyHooks), journaled as a Command event and its Info
// answer, and never sent to the model. A prompt is a command when its first
// block is text whose first word is one of them ("/model x"); any other
// "/…" text goes to the model as usual.

// slashCommand is one command the daemon handles.
type slashCommand struct {
	name, description, hint string
}

// unknownCommand names, for command, a "/word" prompt that is no command,
// answered by the daemon when there is no model to send it to.
const unknownCommand = ""

// slashCommands is what available_commands_update advertises, in order.
var slashCommands = []slashCommand{
	{"compact", "Compact the conversation now: summarize older turns and elide old command output", ""},
	{"model", "Show the models, or switch this session's model", "model id"},
	{"thinking", "Show how much the model thinks, or set it", "default | off | low | high | max"},
	{"mode", "Show the permission mode, or switch it", "ask | auto | read-only"},
	{"sandbox", "Show the sandbox level, or switch it", "read-only | workspace | workspace-network | off"},
	{"allow-project", "Always allow a command prefix or an MCP tool in this project: saved to the project's .dsh-acp/ file", "command prefix | mcp:server/tool"},
	{"usage", "Show how full the context window is, and the session's token counts", ""},
	{"undo", "Take back the last change a command made to your files (turn: everything the last turn changed)", "turn"},
	{"help", "List these commands and the !command convention", ""},
}

func availableCommands() sdk.SessionUpdate {
	cmds := make([]sdk.AvailableCommand, 0, len(slashCommands))
	for _, c := range slashCommands {
		ac := sdk.AvailableCommand{Name: c.name, Description: c.description}
		if c.hint != "" {
			ac.Input = &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: c.hint}}
		}
		cmds = append(cmds, ac)
	}
	return sdk.SessionUpdate{AvailableCommandsUpdate: &sdk.SessionAvailableCommandsUpdate{AvailableCommands: cmds}}
}

// parseCommand reports whether a prompt is a slash command: its name, its
// argument text, the prompt's text as typed, and how many blocks follow the
// first (commands take none).
func parseCommand(pb []agent.PromptBlock) (name, args, text string, extra int, ok bool) {
	t := strings.TrimSpace(firstText(pb))
	if !strings.HasPrefix(t, "/") {
		return "", "", "", 0, false
	}
	name, args, _ = strings.Cut(t[1:], " ")
	for _, c := range slashCommands {
		if c.name == name {
			return name, strings.TrimSpace(args), t, len(pb) - 1, true
		}
	}
	return "", "", "", 0, false
}

// slashWord reports whether a prompt's text is "/word …" — a command
// name, known or not.
func slashWord(text string) (string, bool) {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "/") {
		return "", false
	}
	name, _, _ := strings.Cut(t[1:], " ")
	if name == "" || strings.ContainsAny(name, "/\t\r\n") {
		return "", false
	}
	return name, true
}

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
			return ss.modelsText(ss.window)
		}
		if err := ss.setSetting(modelConfigID, args); err != nil {
			return errorText(err) + "\n\n"
		}
		return fmt.Sprintf("Model: %s (context window %s tokens).\n\n", args, groupThousands(ss.window(args)))
	case "thinking":
		if args == "" {
			return ss.thinkingText()
		}
		if err := ss.setSetting(thinkingConfigID, args); err != nil {
			return errorText(err) + "\n\n"
		}
		return "Thinking: " + ss.agent.Thinking().Label() + ".\n\n"
	case "mode":
		if args == "" {
			return modeText(ss.policy.Mode())
		}
		if err := ss.setSetting(modeConfigID, args); err != nil {
			return errorText(err) + "\n\n"
		}
		mode := ss.policy.Mode()
		return fmt.Sprintf("Permission mode: %s — %s.\n\n", mode, modeInfo[mode].description)
	case "sandbox":
		if args == "" {
			return ss.sandboxText()
		}
		if err := ss.setSetting(sandboxConfigID, args); err != nil {
			return errorText(err) + "\n\n"
		}
		level := ss.agent.Sandbox()
		return fmt.Sprintf("Sandbox: %s — %s.\n\n", level, sandboxInfo[level].description)
	case "usage":
		return usageText(ss.agent.Usage())
	case "allow-project":
		return ss.allowProjectReply(args)
	case "compact":
		return noKeyText
	case unknownCommand:
		return fmt.Sprintf("/%s is not a command of dsh-acp. %s", args, noKeyText) + helpText()
	default:
		return helpText()
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
		fmt.Fprintf(&b, "%s %s — %s\n", mark, m, modeInfo[m].description)
	}
	return b.String() + "\n"
}

func usageText(u agent.UsageReport) string {
	var b strings.Builder
	how := "counted by the provider"
	if !u.Known {
		how = "estimated"
	}
	fmt.Fprintf(&b, "Context: %s of %s tokens (%d %%), %s; compaction starts past %s.\n",
		groupThousands(u.Used), groupThousands(u.Size), percentOf(u.Used, u.Size), how, groupThousands(u.Threshold))
	fmt.Fprintf(&b, "Model: %s.\n", u.Model)
	fmt.Fprintf(&b, "This session: %d model responses; %s prompt tokens (%s from the provider's cache), %s completion tokens; %d compactions.\n",
		u.Requests, groupThousands(u.Prompt), groupThousands(u.Cached), groupThousands(u.Completion), u.Compactions)
	if u.Currency != "" {
		fmt.Fprintf(&b, "Cost so far: %.4f %s.\n", u.Cost, u.Currency)
	}
	return b.String() + "\n"
}

func helpText() string {
	var b strings.Builder
	b.WriteString("Commands (dsh-acp handles them; they never reach the model):\n")
	for _, c := range slashCommands {
		name := "/" + c.name
		if c.hint != "" {
			name += " [" + c.hint + "]"
		}
		fmt.Fprintf(&b, "- %s — %s\n", name, c.description)
	}
	b.WriteString("\nA prompt that starts with ! runs the rest as a shell command, directly, without the model " +
		"(for example !git status); the model sees the command and its output with your next prompt.\n\n")
	return b.String()
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

func percentOf(n, of int) int {
	if of <= 0 {
		return 0
	}
	return int((int64(n)*100 + int64(of)/2) / int64(of))
}

// groupThousands writes n with its thousands separated by commas.
func groupThousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
