package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/tools"
)

// tool is one server tool as the model sees it: a tools.Tool that calls
// the server, says what it needs permission for (tools.NeedTool) and
// draws its card with PresentCall / PresentResult.
type tool struct {
	servers *Servers
	conn    *conn
	name    string
	info    Info
	desc    string
	schema  json.RawMessage
}

var (
	_ tools.Tool         = (*tool)(nil)
	_ tools.Permissioned = (*tool)(nil)
)

func newTool(s *Servers, c *conn, name string, def *sdk.Tool) *tool {
	info := Info{Server: c.spec.Name, Tool: def.Name, ReadOnly: def.Annotations != nil && def.Annotations.ReadOnlyHint}
	desc := def.Description
	if desc == "" {
		desc = def.Title
	}
	if desc == "" {
		desc = fmt.Sprintf("The %s tool of the %s MCP server.", def.Name, c.spec.Name)
	}
	return &tool{servers: s, conn: c, name: name, info: info, desc: desc, schema: objectSchema(def.InputSchema)}
}

func (t *tool) Name() string            { return t.name }
func (t *tool) Description() string     { return t.desc }
func (t *tool) Schema() json.RawMessage { return t.schema }

// Info is what the tool's cards show.
func (t *tool) Info() Info { return t.info }

// same reports whether t and u offer the model the same thing.
func (t *tool) same(u *tool) bool {
	return t.name == u.name && t.info == u.info && t.desc == u.desc && bytes.Equal(t.schema, u.schema) && t.conn == u.conn
}

// Needs says the call runs this server's tool.
func (t *tool) Needs(json.RawMessage) (tools.Need, error) {
	return tools.Need{Kind: tools.NeedTool, Subject: t.info.Title(), Server: t.info.Server, Tool: t.info.Tool,
		ReadOnly: t.info.ReadOnly}, nil
}

// PresentCall draws the call as PresentCall does with the tool's Info.
func (t *tool) PresentCall(args json.RawMessage) tools.CallIntent { return PresentCall(t.info, args) }

// PresentResult draws the result as PresentResult does.
func (t *tool) PresentResult(args json.RawMessage, res event.Result) tools.ResultIntent {
	return PresentResult(t.info, args, res)
}

// Run calls the tool with the model's arguments, within the call timeout.
// A cancelled ctx cancels the call on the server too (the SDK sends
// notifications/cancelled for it). A completed call's text is capped for
// the model, the whole of it spilled to a file when cut; an MCP error, a
// lost server, a timeout and a cancel are IsError results saying so.
func (t *tool) Run(ctx context.Context, call tools.Call) event.Result {
	if !isObject(call.Args) {
		return event.Result{Text: "the arguments must be a JSON object", IsError: true}
	}
	cctx, cancel := context.WithTimeout(ctx, t.servers.cfg.CallTimeout)
	defer cancel()
	res, err := t.conn.cs.CallTool(cctx, &sdk.CallToolParams{Name: t.info.Tool, Arguments: json.RawMessage(call.Args)})
	if err != nil {
		return t.failed(ctx, cctx, err)
	}
	text := renderResult(res)
	p := Payload{ToolError: res.IsError}
	if utf8.RuneCountInString(text) > t.servers.cfg.OutputLimit {
		p.SpillPath = t.spill(text)
		text, p.Truncated = tools.CapText(text, t.servers.cfg.OutputLimit, p.SpillPath)
	}
	return event.Result{Text: text, IsError: res.IsError, Payload: p.encode()}
}

// failed is the result of a call that did not complete.
func (t *tool) failed(ctx, cctx context.Context, err error) event.Result {
	server := t.info.Server
	var p Payload
	var text string
	var rpcErr *jsonrpc.Error
	switch {
	case ctx.Err() != nil:
		p.Failure, text = FailCancelled, "cancelled: the call was cancelled"
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		p.Failure = FailTimeout
		text = fmt.Sprintf("the %s MCP server did not answer within %v; the call was cancelled", server, t.servers.cfg.CallTimeout)
	case errors.Is(err, sdk.ErrConnectionClosed):
		p.Failure, text = FailDisconnected, fmt.Sprintf("the %s MCP server is not connected any more", server)
		if t.conn.proc != nil {
			if msg := failure(t.conn.proc); msg != "" {
				text += " (" + msg + ")"
			}
		}
	case errors.As(err, &rpcErr):
		p.Failure = FailProtocol
		text = fmt.Sprintf("MCP error %d from the %s server: %s", rpcErr.Code, server, rpcErr.Message)
	default:
		p.Failure = FailProtocol
		text = fmt.Sprintf("the call to the %s MCP server failed: %v", server, err)
	}
	t.servers.log.Debug("mcp call failed", zap.String("server", server), zap.String("tool", t.info.Tool), zap.String("failure", p.Failure))
	return event.Result{Text: text, IsError: true, Payload: p.encode()}
}

// spill keeps text whole in a file; "" when it cannot.
func (t *tool) spill(text string) string {
	sp := t.servers.cfg.Spill
	if sp == nil {
		return ""
	}
	base := "mcp-" + sanitize(t.info.Server) + "-" + strconv.FormatInt(t.servers.spills.Add(1), 10)
	path, err := sp.SpillText(t.servers.owner, base, []byte(text))
	if err != nil {
		t.servers.log.Warn("mcp spill", zap.String("server", t.info.Server), zap.Error(err))
		return ""
	}
	return path
}

// objectSchema is a tool's input schema as the providers take it: a JSON
// object schema ({"type":"object","properties":{}} when the server gave
// none or something else).
func objectSchema(schema any) json.RawMessage {
	var m map[string]any
	if b, err := json.Marshal(schema); err == nil {
		_ = json.Unmarshal(b, &m)
	}
	if m == nil {
		m = map[string]any{}
	}
	if _, ok := m["type"]; !ok {
		m["type"] = "object"
	}
	if m["type"] == "object" {
		if _, ok := m["properties"]; !ok {
			m["properties"] = map[string]any{}
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return b
}

func isObject(args json.RawMessage) bool {
	var obj map[string]json.RawMessage
	return json.Unmarshal(args, &obj) == nil && obj != nil
}
