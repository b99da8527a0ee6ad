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
// sandbox, where and why (why wraps executor.ErrSandbox), and what they can
// do — the executor's advice when why carries an executor.SandboxReason;
// it ends in a blank line.
func Unsandboxed(why error) string {
	who := "Commands in this session run without a sandbox, with your own access to files and the network"
	fix := "See docs/security.md for what confining them needs."
	if r := executor.ReasonOf(why); r != nil {
		if r.Host != "" {
			who = fmt.Sprintf("Commands in this session run on %s without a sandbox, with the access of the account the agent logs in as", r.Host)
		}
		if r.Fix != "" {
			fix = r.Fix
		}
	}
	return fmt.Sprintf("%s: %s. %s\n\n", who, Reason(why), fix)
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
// when the executor gave no reason), naming where, the levels that are
// offered and, when the executor says, what the user can do.
func Refused(level executor.Level, why error, offered []executor.Level) string {
	if why == nil {
		why = fmt.Errorf("%w: level %s is not offered here", executor.ErrSandbox, level)
	}
	where, fix := whereAndFix(why)
	msg := fmt.Sprintf("sandbox level %s cannot be built %s: %s (offered: %s)", level, where, Reason(why), levelList(offered))
	if fix != "" {
		msg += ". " + fix
	}
	return msg
}

// whereAndFix are "here" or "on the host H", and the executor's fix ("" when
// it gives none), from the executor.SandboxReason why carries.
func whereAndFix(why error) (where, fix string) {
	if r := executor.ReasonOf(why); r != nil {
		return r.Where(), r.Fix
	}
	return "here", ""
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
// where, why and what the user can do; it ends in a blank line.
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
		where, fix := whereAndFix(why)
		fmt.Fprintf(&b, "\nConfined levels cannot be built %s: %s.", where, Reason(why))
		if fix != "" {
			b.WriteString(" " + fix)
		}
		if current.Confined() {
			b.WriteString(" Meanwhile commands are refused, unless you choose off.")
		}
		b.WriteString("\n")
	} else if current.Confined() {
		b.WriteString("\nIn ask mode, commands that run unasked because they look read-only run at read-only; in read-only mode, every command does.\n")
	}
	return b.String() + "\n"
}
