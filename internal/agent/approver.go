package agent

import (
	"context"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/tools"
)

// Approver is the permission step between the model's tool call and the
// tool's Run. The loop asks it for every model-issued call (never for direct
// `!` commands); a nil Approver allows everything.
type Approver interface {
	// Approve decides whether call may run for session s. It may block while
	// a user decides; it must return promptly when ctx is cancelled.
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
)

// Approval is an Approver's answer.
type Approval struct {
	Verdict Verdict
	// Reason is the text the model reads when the call is denied.
	Reason string
	// Decision, when its Verdict is set, is recorded as the call's
	// event.Decision (the loop fills in the call id and Reason).
	Decision event.Decision
}
