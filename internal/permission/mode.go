package permission

import (
	"fmt"
	"strings"
)

// Mode is how strictly commands are gated.
type Mode string

const (
	// ModeAsk runs read-only commands and commands an allow rule covers,
	// denies what a deny rule matches, and asks about everything else.
	ModeAsk Mode = "ask"
	// ModeAuto runs everything without asking, except what a deny rule
	// matches (or might match).
	ModeAuto Mode = "auto"
	// ModeReadOnly runs only commands proven read-only and denies the rest;
	// allow rules do not widen it.
	ModeReadOnly Mode = "read-only"
)

// Modes lists the modes in the order a user would meet them.
func Modes() []Mode { return []Mode{ModeAsk, ModeAuto, ModeReadOnly} }

// ParseMode reads a mode name ("ask", "auto", "read-only"; case and
// surrounding space are ignored). An empty string is ModeAsk.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "":
		return ModeAsk, nil
	case ModeAsk, ModeAuto, ModeReadOnly:
		return m, nil
	default:
		return "", fmt.Errorf("unknown permission mode %q (want ask, auto or read-only)", s)
	}
}

// Decision is the outcome of Decide.
type Decision uint8

const (
	// Allow runs the command without asking.
	Allow Decision = iota
	// Ask needs the user's approval before the command runs.
	Ask
	// Deny refuses the command; Verdict.Reason says why, for the model.
	Deny
)

// String returns "allow", "ask" or "deny".
func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	case Deny:
		return "deny"
	default:
		return fmt.Sprintf("decision(%d)", uint8(d))
	}
}

// Verdict is a decision with its explanation.
type Verdict struct {
	Decision
	// Reason explains the decision in one line. For Deny it is written for
	// the model, which reads it as the tool's error result.
	Reason string
	// Prefixes is what "always allow" would remember for this command (rule
	// strings as in the rule files, e.g. "go test"). Empty when always-allow
	// must not be offered. Only set when Decision is Ask; today it holds at
	// most one prefix.
	Prefixes []string
	// Ends reports that the judge knows the command ends: every command
	// is read-only and ends (no tail -f, sleep infinity, yes, loop,
	// coprocess, device or descriptor read). Commands it does not know —
	// npm run dev, make — are not known to end.
	Ends bool
	// CreatesRepository reports that the line runs `git init` (or a git
	// whose subcommand is known only at run time): it asks first in every
	// mode, and once approved may create the repository the sandbox
	// otherwise keeps from being made (executor.Spec.AllowNewRepository).
	CreatesRepository bool
}

// String renders the verdict as "decision: reason".
func (v Verdict) String() string {
	return v.Decision.String() + ": " + v.Reason
}
