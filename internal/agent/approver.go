package agent

import (
	"context"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/tools"
)

// Approver is the permission step between the model's tool call and the
// tool's Run. The loop asks it for every model-issued call (never for direct
// `!` commands); a nil Approver allows everything.
//
// The loop asks before the call's card opens, so a call that will be asked
// about opens pending: Approve decides what it can without the user and
// returns at once; when the user must answer it returns Verdict Ask with an
// Ask function, which the loop calls once the card is open (ToolCall with
// Pending set).
type Approver interface {
	// Approve decides whether call may run for session s. It must not wait
	// for the user (return Ask instead); it must return promptly when ctx
	// is cancelled.
	Approve(ctx context.Context, s tools.Session, call event.ToolCall) Approval
}

// Verdict is an Approver's decision.
type Verdict uint8

const (
	// Allow runs the call.
	Allow Verdict = iota
	// Deny does not run it; the model reads Approval.Reason as an error result
	// and the card ends failed.
	Deny
	// CancelTurn does not run it and cancels the whole turn (the user
	// dismissed the question by cancelling).
	CancelTurn
	// Ask means the user decides: the loop opens the call's card pending and
	// calls Approval.Ask for the answer.
	Ask
)

// Approval is an Approver's answer.
type Approval struct {
	Verdict Verdict
	// Reason is the text the model reads when the call is denied.
	Reason string
	// UserReason is the short line the user reads on the call's card when
	// it is denied (event.Result.Declined), e.g. "declined by the user";
	// Reason when empty.
	UserReason string
	// Decision, when its Verdict is set, is recorded as the call's
	// event.Decision (the loop fills in the call id and Reason).
	Decision event.Decision
	// Level, with Verdict Allow, is the sandbox level the call's commands
	// run at (tools.Call.Level); empty means the session's level.
	Level executor.Level
	// NewRepository, with Verdict Allow, lets the call create a git
	// repository where the sandbox otherwise keeps one from being made
	// (tools.Call.NewRepository): the user approved a `git init`.
	NewRepository bool
	// Ask, with Verdict Ask, puts the question to the user and blocks until
	// the answer (or ctx's end); it returns an Approval whose Verdict is
	// not Ask. The loop calls it once, after the call's card opened.
	Ask func(ctx context.Context) Approval
}
