// Package slash is the slash commands the daemon answers itself: their
// list (advertised with available_commands_update, in order), how a
// prompt is recognized as one, and the answers that are texts of their
// inputs alone (help, usage, the model list).
//
// Contract: a prompt is a command when its first block is text whose first
// word is "/" and a listed name ("/model x"): Parse says so, with the
// argument text and how many blocks follow (commands take none). Any other
// "/word" is no command (Word finds it: the daemon answers it itself only
// when there is no model to send it to). Commands are journaled as a
// Command event with their Info answer and never sent to the model; acp
// runs them (its commandReply) and owns the answers that read a session's
// state.
//
// # Known limits
//
// Names are matched exactly (no abbreviations, no case folding); the texts
// are English only.
package slash

import (
	"fmt"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/internal/agent"
)

// Command is one command the daemon handles.
type Command struct {
	Name, Description string
	Hint              string // the argument's hint, "" for none
}

// Unknown names, for a command, a "/word" prompt that is no command,
// answered by the daemon when there is no model to send it to.
const Unknown = ""

// Commands is what available_commands_update advertises, in order.
var Commands = []Command{
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

// Available is the available_commands_update that advertises Commands.
func Available() sdk.SessionUpdate {
	cmds := make([]sdk.AvailableCommand, 0, len(Commands))
	for _, c := range Commands {
		ac := sdk.AvailableCommand{Name: c.Name, Description: c.Description}
		if c.Hint != "" {
			ac.Input = &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: c.Hint}}
		}
		cmds = append(cmds, ac)
	}
	return sdk.SessionUpdate{AvailableCommandsUpdate: &sdk.SessionAvailableCommandsUpdate{AvailableCommands: cmds}}
}

// Parse reports whether a prompt is a slash command: its name, its
// argument text, the prompt's text as typed, and how many blocks follow
// the first (commands take none).
func Parse(pb []agent.PromptBlock) (name, args, text string, extra int, ok bool) {
	if len(pb) == 0 || pb[0].Type != "text" {
		return "", "", "", 0, false
	}
	t := strings.TrimSpace(pb[0].Text)
	if !strings.HasPrefix(t, "/") {
		return "", "", "", 0, false
	}
	name, args, _ = strings.Cut(t[1:], " ")
	for _, c := range Commands {
		if c.Name == name {
			return name, strings.TrimSpace(args), t, len(pb) - 1, true
		}
	}
	return "", "", "", 0, false
}

// Word reports whether a prompt's text is "/word …" — a command name,
// known or not — and returns the word.
func Word(text string) (string, bool) {
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

// Help lists the commands and the !command convention.
func Help() string {
	var b strings.Builder
	b.WriteString("Commands (dsh-acp handles them; they never reach the model):\n")
	for _, c := range Commands {
		name := "/" + c.Name
		if c.Hint != "" {
			name += " [" + c.Hint + "]"
		}
		fmt.Fprintf(&b, "- %s — %s\n", name, c.Description)
	}
	b.WriteString("\nA prompt that starts with ! runs the rest as a shell command, directly, without the model " +
		"(for example !git status); the model sees the command and its output with your next prompt.\n\n")
	return b.String()
}

// Usage is /usage's answer: how full the context window is and the
// session's token counts (and cost, when a price is configured).
func Usage(u agent.UsageReport) string {
	var b strings.Builder
	how := "counted by the provider"
	if !u.Known {
		how = "estimated"
	}
	fmt.Fprintf(&b, "Context: %s of %s tokens (%d %%), %s; compaction starts past %s.\n",
		Thousands(u.Used), Thousands(u.Size), percentOf(u.Used, u.Size), how, Thousands(u.Threshold))
	fmt.Fprintf(&b, "Model: %s.\n", u.Model)
	fmt.Fprintf(&b, "This session: %d model responses; %s prompt tokens (%s from the provider's cache), %s completion tokens; %d compactions.\n",
		u.Requests, Thousands(u.Prompt), Thousands(u.Cached), Thousands(u.Completion), u.Compactions)
	if u.Currency != "" {
		fmt.Fprintf(&b, "Cost so far: %.4f %s.\n", u.Cost, u.Currency)
	}
	return b.String() + "\n"
}

// Models is /model's answer without an argument: the current model and
// its context window (window), and the models the provider offers.
func Models(current string, models []string, window func(string) int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Model: %s (context window %s tokens). Switch with /model ID; the provider offers:\n", current, Thousands(window(current)))
	for _, id := range models {
		mark := " "
		if id == current {
			mark = "*"
		}
		fmt.Fprintf(&b, "%s %s\n", mark, id)
	}
	return b.String() + "\n"
}

func percentOf(n, of int) int {
	if of <= 0 {
		return 0
	}
	return int((int64(n)*100 + int64(of)/2) / int64(of))
}

// Thousands writes n with its thousands separated by commas.
func Thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
