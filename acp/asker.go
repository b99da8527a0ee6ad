package acp

import (
	"context"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/internal/approval"
)

// asker puts a session's permission questions to the client as
// session/request_permission, the call's pending card as their subject
// (approval.Asker).
type asker struct {
	ss     *session
	client permissionClient
}

// permissionClient asks the client (clientConn).
type permissionClient interface {
	RequestPermission(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error)
}

// Ask sends the question and returns the chosen option's id,
// approval.Cancelled or approval.Failed.
func (a asker) Ask(ctx context.Context, callID string, options []approval.Option) string {
	opts := make([]sdk.PermissionOption, len(options))
	for i, o := range options {
		opts[i] = sdk.PermissionOption{OptionId: sdk.PermissionOptionId(o.ID), Name: o.Name, Kind: sdk.PermissionOptionKind(o.Kind)}
	}
	resp, err := a.client.RequestPermission(ctx, sdk.RequestPermissionRequest{
		SessionId: sdk.SessionId(a.ss.id), ToolCall: a.ss.present.Asking(callID), Options: opts,
	})
	switch {
	case ctx.Err() != nil:
		return approval.Cancelled
	case err != nil:
		a.ss.log.Warn("request_permission failed", zap.String("session", a.ss.id), zap.String("call", callID), zap.Error(err))
		return approval.Failed
	case resp.Outcome.Selected != nil:
		return string(resp.Outcome.Selected.OptionId)
	}
	return approval.Cancelled
}

// Allowed marks the call's card running again.
func (a asker) Allowed(callID string) { a.ss.present.Allowed(callID) }
