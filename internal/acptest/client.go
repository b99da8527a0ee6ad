package acptest

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sourcegraph/jsonrpc2"
)

// ZedCapabilities returns the clientCapabilities Zed sends in initialize:
// file system access, client terminals, and the terminal-card _meta
// extension. Each call returns a fresh map the caller may change.
func ZedCapabilities() map[string]any {
	caps := PlainCapabilities()
	caps["_meta"] = map[string]any{"terminal_output": true, "terminal-auth": true}
	return caps
}

// PlainCapabilities returns clientCapabilities of a client without Zed's
// _meta extension: no terminal cards, so command output comes as text.
func PlainCapabilities() map[string]any {
	return map[string]any{
		"fs":       map[string]any{"readTextFile": true, "writeTextFile": true},
		"terminal": true,
	}
}

// InitializeParams returns initialize params for protocol version 1 with the
// given clientCapabilities.
func InitializeParams(caps map[string]any) map[string]any {
	return map[string]any{
		"protocolVersion":    1,
		"clientInfo":         map[string]any{"name": "acptest", "version": "0"},
		"clientCapabilities": caps,
	}
}

// DefaultResponder answers session/request_permission with the first
// allow_once option and every other request with -32601.
func DefaultResponder(ctx context.Context, method string, params json.RawMessage) (any, error) {
	return PermissionResponder("allow_once")(ctx, method, params)
}

// PermissionResponder answers session/request_permission by selecting the
// first option of the given kind (allow_once, allow_always, reject_once,
// reject_always), or with outcome "cancelled" when kind is "cancelled". A
// request offering no option of that kind gets -32602. Every other method
// gets -32601.
func PermissionResponder(kind string) Responder {
	return func(_ context.Context, method string, params json.RawMessage) (any, error) {
		if method != "session/request_permission" {
			return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "method not found: " + method}
		}
		if kind == "cancelled" {
			return map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}, nil
		}
		var req struct {
			Options []struct {
				OptionID string `json:"optionId"`
				Kind     string `json:"kind"`
			} `json:"options"`
		}
		if err := json.Unmarshal(params, &req); err != nil {
			return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: err.Error()}
		}
		for _, o := range req.Options {
			if o.Kind == kind {
				return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": o.OptionID}}, nil
			}
		}
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: fmt.Sprintf("no %s option offered", kind)}
	}
}

// UpdateKind returns the sessionUpdate discriminator of an update object
// ("agent_message_chunk", "tool_call", …), or "" if it has none.
func UpdateKind(update json.RawMessage) string {
	var u struct {
		SessionUpdate string `json:"sessionUpdate"`
	}
	_ = json.Unmarshal(update, &u)
	return u.SessionUpdate
}
