package mcp

import (
	"encoding/json"
	"strings"
	"sync"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/tools"
)

// Info is what an MCP tool call's card shows besides the call's
// arguments: the server's and the tool's own names and whether the server
// marks the tool read-only. It is journaled (see StateKey) when a session
// first offers the tool, so a reload draws the card exactly as it was
// drawn live, with or without the server.
type Info struct {
	Server   string `json:"server"`
	Tool     string `json:"tool"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// Title is the card title "<server>: <tool>".
func (i Info) Title() string { return i.Server + ": " + i.Tool }

// infoFromName is the Info of a name without a recorded one: its sanitized
// parts, not read-only.
func infoFromName(name string) Info {
	server, tool, ok := splitName(name)
	if !ok {
		return Info{Server: "mcp", Tool: strings.TrimPrefix(name, NamePrefix)}
	}
	return Info{Server: server, Tool: tool}
}

// StatePrefix starts the journal state keys holding tools' Info.
const StatePrefix = "mcp.tool."

// StateKey is the journal state key of the Info of the tool named name.
func StateKey(name string) string { return StatePrefix + name }

// Payload is an MCP tool result's event.Result.Payload.
type Payload struct {
	// Failure says why the call did not complete, "" when it did:
	// FailProtocol, FailDisconnected, FailTimeout or FailCancelled.
	Failure string `json:"failure,omitempty"`
	// ToolError: the tool completed but reported an error (isError).
	ToolError bool `json:"toolError,omitempty"`
	// Truncated: the model's text was cut; SpillPath, when set, holds the
	// whole of it.
	Truncated bool   `json:"truncated,omitempty"`
	SpillPath string `json:"spillPath,omitempty"`
}

// Why an MCP call did not complete.
const (
	FailProtocol     = "protocol"     // the server answered with an MCP (JSON-RPC) error
	FailDisconnected = "disconnected" // the server is gone
	FailTimeout      = "timeout"      // no answer within the call timeout
	FailCancelled    = "cancelled"    // the turn was cancelled during the call
)

// PayloadOf decodes an MCP result's payload; any other gives the zero
// Payload.
func PayloadOf(r event.Result) Payload {
	var p Payload
	if len(r.Payload) > 0 {
		_ = json.Unmarshal(r.Payload, &p) // not a Payload: the zero value
	}
	return p
}

func (p Payload) encode() json.RawMessage {
	if p == (Payload{}) {
		return nil
	}
	b, _ := json.Marshal(p) // plain fields always encode
	return b
}

// ACP tool kinds of MCP cards.
const (
	kindRead  = "read"
	kindOther = "other"
)

// reasonLimit caps a card's reason line, in runes.
const reasonLimit = 200

// PresentCall opens a generic card titled "<server>: <tool>", of kind read
// when the server marks the tool read-only and other otherwise, with the
// arguments as rawInput. Pure: the same live and on replay; it never
// panics, whatever args hold.
func PresentCall(info Info, args json.RawMessage) tools.CallIntent {
	kind := kindOther
	if info.ReadOnly {
		kind = kindRead
	}
	return tools.CallIntent{Card: tools.CardGeneric, Title: info.Title(), Kind: kind, RawInput: tools.RawInput(args)}
}

// PresentResult ends the card with the result's text (what the model
// read: the tool's text content, images and resources summarised) as its
// content, fenced when it is JSON, and fails it when the call was
// declined, did not complete or the tool reported an error. Pure, as
// PresentCall.
func PresentResult(_ Info, _ json.RawMessage, res event.Result) tools.ResultIntent {
	p := PayloadOf(res)
	failed := res.IsError || res.Declined != "" || p.Failure != "" || p.ToolError
	text := res.Text
	if text == "" {
		text = res.Declined
	}
	var content []string
	if text != "" {
		content = []string{cardText(text, p.Truncated)}
	}
	out := tools.ResultIntent{Card: tools.CardGeneric, Failed: failed, Content: content, RawOutput: summarize(res, p)}
	if failed && (res.Declined != "" || p.Failure != "") {
		out.Reason = reasonLine(text)
	}
	return out
}

// cardText shows JSON as a fenced block (also a JSON text cut short,
// whose truncation lines then sit inside the block), anything else as
// Markdown.
func cardText(text string, truncated bool) string {
	t := strings.TrimSpace(text)
	if json.Valid([]byte(t)) && (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) ||
		truncated && strings.HasPrefix(t, "{") {
		return tools.Fence("json", text)
	}
	return text
}

// reasonLine is the first line of s, at most reasonLimit runes.
func reasonLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > reasonLimit {
		s = string(r[:reasonLimit-1]) + "…"
	}
	return s
}

// resultSummary is a card's rawOutput: the structured part of the result.
type resultSummary struct {
	IsError   bool   `json:"isError,omitempty"`
	Declined  string `json:"declined,omitempty"`
	Failure   string `json:"failure,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	SpillPath string `json:"spillPath,omitempty"`
}

func summarize(res event.Result, p Payload) resultSummary {
	return resultSummary{IsError: res.IsError || p.ToolError, Declined: res.Declined, Failure: p.Failure,
		Truncated: p.Truncated, SpillPath: p.SpillPath}
}

// CardIntents gives card intents by tool name; *tools.Registry and
// presentation.CardIntents have this shape.
type CardIntents interface {
	PresentCall(name string, args json.RawMessage) tools.CallIntent
	PresentResult(name string, args json.RawMessage, res event.Result) tools.ResultIntent
}

// Cards draws calls of MCP tools whether or not their server is connected:
// a name the base registry holds is drawn by its tool; an MCP name by the
// Info learned for it (Learn, LearnState), or, when none was, by the parts
// of the name; anything else by the base's unknown-tool card. Safe for
// concurrent use.
type Cards struct {
	base CardIntents

	mu    sync.RWMutex
	infos map[string]Info
}

// NewCards returns Cards over base (a registry of the tools that are
// always there).
func NewCards(base CardIntents) *Cards { return &Cards{base: base, infos: map[string]Info{}} }

// Learn records the Info of the tool named name; it reports whether that
// changed what was known.
func (c *Cards) Learn(name string, info Info) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.infos[name]; ok && old == info {
		return false
	}
	c.infos[name] = info
	return true
}

// LearnState learns from a journal state record: ok is false (and nothing
// is learned) for a key that is not a StateKey or a value that is not an
// Info.
func (c *Cards) LearnState(key string, value json.RawMessage) (ok bool) {
	name, found := strings.CutPrefix(key, StatePrefix)
	if !found || !IsToolName(name) {
		return false
	}
	var info Info
	if json.Unmarshal(value, &info) != nil || info.Server == "" || info.Tool == "" {
		return false
	}
	c.Learn(name, info)
	return true
}

// info is the Info for an MCP name: learned, else from the name.
func (c *Cards) info(name string) Info {
	c.mu.RLock()
	info, ok := c.infos[name]
	c.mu.RUnlock()
	if ok {
		return info
	}
	return infoFromName(name)
}

// mcpName reports whether name is drawn as an MCP tool here: it has the
// prefix and the base does not hold it.
func (c *Cards) mcpName(name string) bool {
	if !IsToolName(name) {
		return false
	}
	if h, ok := c.base.(interface {
		Lookup(string) (tools.Tool, bool)
	}); ok {
		if _, held := h.Lookup(name); held {
			return false
		}
	}
	return true
}

// PresentCall is the card intent for a call to the tool named name.
func (c *Cards) PresentCall(name string, args json.RawMessage) tools.CallIntent {
	if c.mcpName(name) {
		return PresentCall(c.info(name), args)
	}
	return c.base.PresentCall(name, args)
}

// PresentResult is the result intent for a call to the tool named name.
func (c *Cards) PresentResult(name string, args json.RawMessage, res event.Result) tools.ResultIntent {
	if c.mcpName(name) {
		return PresentResult(c.info(name), args, res)
	}
	return c.base.PresentResult(name, args, res)
}
