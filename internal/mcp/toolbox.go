package mcp

import (
	"encoding/json"
	"sync/atomic"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/tools"
)

// Toolbox is one session's tools: the daemon's base registry followed by
// the session's own (its MCP servers'), swapped as a whole by Set between
// turns. It is what the session's loop offers the model (Lookup, All,
// PromptSection), what its approver asks (Needs) and what its presenter
// draws with (PresentCall, PresentResult: an MCP call is drawn from the
// Info learned for its name even when its server is not connected).
// Safe for concurrent use.
type Toolbox struct {
	base  *tools.Registry
	cur   atomic.Pointer[tools.Registry]
	cards *Cards
}

// NewToolbox returns a toolbox holding base's tools.
func NewToolbox(base *tools.Registry) *Toolbox {
	b := &Toolbox{base: base}
	b.cur.Store(base)
	b.cards = NewCards(current{b})
	return b
}

// current is the toolbox's registry of the moment, as Cards' base.
type current struct{ b *Toolbox }

func (c current) Lookup(name string) (tools.Tool, bool) { return c.b.cur.Load().Lookup(name) }
func (c current) PresentCall(name string, args json.RawMessage) tools.CallIntent {
	return c.b.cur.Load().PresentCall(name, args)
}
func (c current) PresentResult(name string, args json.RawMessage, res event.Result) tools.ResultIntent {
	return c.b.cur.Load().PresentResult(name, args, res)
}

// Set replaces the session's own tools with extra (the base's stay first)
// and returns the MCP tools whose Info is new to the toolbox, so the
// caller can journal them (StateKey). A name clash with a base tool is an
// error, and the tools stay as they were.
func (b *Toolbox) Set(extra []tools.Tool) (learned map[string]Info, err error) {
	reg, err := b.base.With(extra...)
	if err != nil {
		return nil, err
	}
	for _, t := range extra {
		if it, ok := t.(interface{ Info() Info }); ok && b.cards.Learn(t.Name(), it.Info()) {
			if learned == nil {
				learned = map[string]Info{}
			}
			learned[t.Name()] = it.Info()
		}
	}
	b.cur.Store(reg)
	return learned, nil
}

// Cards is the toolbox's card drawer, to learn recorded Info into.
func (b *Toolbox) Cards() *Cards { return b.cards }

// Lookup finds a tool by the name the model calls it by.
func (b *Toolbox) Lookup(name string) (tools.Tool, bool) { return b.cur.Load().Lookup(name) }

// All lists the tools in the order the model sees them.
func (b *Toolbox) All() []tools.Tool { return b.cur.Load().All() }

// PromptSection is the tools' part of the system prompt of session s.
func (b *Toolbox) PromptSection(s tools.Session) string { return b.cur.Load().PromptSection(s) }

// Needs says what a call needs permission for (see tools.Registry.Needs).
func (b *Toolbox) Needs(name string, args json.RawMessage) (tools.Need, error) {
	return b.cur.Load().Needs(name, args)
}

// PresentCall is the card intent for a call to the tool named name.
func (b *Toolbox) PresentCall(name string, args json.RawMessage) tools.CallIntent {
	return b.cards.PresentCall(name, args)
}

// PresentResult is the result intent for a call to the tool named name.
func (b *Toolbox) PresentResult(name string, args json.RawMessage, res event.Result) tools.ResultIntent {
	return b.cards.PresentResult(name, args, res)
}
