package sandboxlevel

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/executor"
)

var info = map[executor.Level]struct{ name, description string }{
	executor.LevelReadOnly:         {"Read-only", "Commands write only throwaway space (/tmp, ~/.cache); no network"},
	executor.LevelWorkspace:        {"Workspace", "Commands may write the session's directory and throwaway space; no network"},
	executor.LevelWorkspaceNetwork: {"Workspace + network", "As Workspace, with the network"},
	executor.LevelOff:              {"Off", "No sandbox: commands run with your own access to files and the network"},
}

// Describe says what commands may do at level l.
func Describe(l executor.Level) string { return info[l].description }

// Option is the sandbox config option: the levels offered, and current
// even when it is not (an explicit level that cannot be built).
func Option(current executor.Level, offered []executor.Level) sdk.SessionConfigOption {
	var opts sdk.SessionConfigSelectOptionsUngrouped
	for _, l := range shown(current, offered) {
		opts = append(opts, sdk.SessionConfigSelectOption{
			Value: sdk.SessionConfigValueId(l), Name: info[l].name, Description: sdk.Ptr(info[l].description),
		})
	}
	o := sdk.NewSessionConfigOptionSelect(sdk.SessionConfigValueId(current), sdk.SessionConfigSelectOptions{Ungrouped: &opts})
	o.Select.Id = ConfigID
	o.Select.Name = "Sandbox"
	o.Select.Description = sdk.Ptr("What commands can write and whether they reach the network")
	return o
}

// shown are the levels a choice lists: the offered ones and current, in
// executor.AllLevels order.
func shown(current executor.Level, offered []executor.Level) []executor.Level {
	return slices.DeleteFunc(executor.AllLevels(), func(l executor.Level) bool {
		return l != current && !slices.Contains(offered, l)
	})
}

// Unsandboxed tells the user that a session's commands run without a
// sandbox, and why (why wraps executor.ErrSandbox), ending in a blank
// line.
func Unsandboxed(why error) string {
	reason := Reason(why)
	fix := "See docs/security.md for what confining them needs."
	if strings.Contains(reason, "not found") {
		fix = "Install what is missing (Debian/Ubuntu: apt install bubblewrap util-linux) and restart the agent to confine them; see docs/security.md."
	}
	return fmt.Sprintf("Commands in this session run without a sandbox, with your own access to files and the network: %s. %s\n\n", reason, fix)
}

// Reason is why's text without the executor.ErrSandbox prefix.
func Reason(why error) string {
	msg := why.Error()
	if p := executor.ErrSandbox.Error() + ": "; errors.Is(why, executor.ErrSandbox) {
		if i := strings.LastIndex(msg, p); i >= 0 {
			msg = msg[i+len(p):]
		}
	}
	return msg
}

// Refused is why level cannot be chosen (it is not offered: why, or nil
// when the executor gave no reason), naming the levels that are.
func Refused(level executor.Level, why error, offered []executor.Level) string {
	if why == nil {
		why = fmt.Errorf("%w: level %s is not offered here", executor.ErrSandbox, level)
	}
	return fmt.Sprintf("sandbox level %s cannot be built here: %s (offered: %s)", level, Reason(why), levelList(offered))
}

func levelList(ls []executor.Level) string {
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = string(l)
	}
	return strings.Join(s, ", ")
}

// Text is /sandbox's answer without an argument: the current level, the
// levels to switch to and, when confined levels cannot be built (why),
// why; it ends in a blank line.
func Text(current executor.Level, offered []executor.Level, why error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Sandbox: %s — %s. Switch with /sandbox LEVEL:\n", current, info[current].description)
	for _, l := range shown(current, offered) {
		mark := " "
		if l == current {
			mark = "*"
		}
		fmt.Fprintf(&b, "%s %s — %s\n", mark, l, info[l].description)
	}
	if why != nil {
		fmt.Fprintf(&b, "\nConfined levels cannot be built here: %s.", Reason(why))
		if current.Confined() {
			b.WriteString(" Commands are refused until you choose off or bubblewrap works.")
		}
		b.WriteString("\n")
	} else if current.Confined() {
		b.WriteString("\nIn ask mode, commands that run unasked because they look read-only run at read-only; in read-only mode, every command does.\n")
	}
	return b.String() + "\n"
}
