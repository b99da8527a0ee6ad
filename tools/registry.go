package tools

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/event"
)

// Registry is a toolbox: the tools a session offers the model, by name, in
// the order they were registered. Register before sharing it; after that
// every method is safe for concurrent use by any number of sessions.
type Registry struct {
	tools  []Tool
	byName map[string]Tool
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{byName: map[string]Tool{}} }

// Register adds t. A second tool with the same name, or an empty name, is
// refused.
func (r *Registry) Register(t Tool) error {
	name := t.Name()
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("register tool: empty name")
	}
	if _, dup := r.byName[name]; dup {
		return fmt.Errorf("register tool %q: a tool with this name is already registered", name)
	}
	r.tools = append(r.tools, t)
	r.byName[name] = t
	return nil
}

// With returns a new registry holding r's tools followed by extra (a
// session's own tools, such as its MCP servers'); r is unchanged.
func (r *Registry) With(extra ...Tool) (*Registry, error) {
	out := NewRegistry()
	for _, t := range append(r.All(), extra...) {
		if err := out.Register(t); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// NewBash returns a registry holding the three bash tools over ex with
// cfg's limits (zero fields take their defaults); the texts state cfg's
// limits.
func NewBash(ex executor.Executor, cfg Config) *Registry {
	r := NewRegistry()
	for _, t := range bashTools(ex, cfg) {
		if err := r.Register(t); err != nil {
			panic(err) // unreachable: three distinct names
		}
	}
	return r
}

// NewBuiltin returns the tools the daemon offers every session: NewBash's
// three, then todo_write (the model's plan).
func NewBuiltin(ex executor.Executor, cfg Config) *Registry {
	r := NewBash(ex, cfg)
	if err := r.Register(NewTodoWrite()); err != nil {
		panic(err) // unreachable: a fourth distinct name
	}
	return r
}

// bashTools builds bash, bash_output and bash_kill. What the model reads
// (descriptions, schemas, the prompt section) is rendered on first use, a
// model request, not at start-up.
func bashTools(ex executor.Executor, cfg Config) []Tool {
	cfg = cfg.withDefaults()
	txt := sync.OnceValue(func() texts {
		where := ""
		if r, ok := ex.(executor.Remote); ok {
			where = r.Describe()
		}
		return renderTexts(cfg, where)
	})
	return []Tool{
		&bash{ex: ex, cfg: cfg, text: txt, schema: sync.OnceValue(func() json.RawMessage { return bashSchema(cfg) })},
		&bashOutput{ex: ex, cfg: cfg, text: txt,
			schema: sync.OnceValue(func() json.RawMessage {
				return taskIDSchema("The id of the background task, e.g. \"bash-1\".")
			})},
		&bashKill{ex: ex, text: txt,
			schema: sync.OnceValue(func() json.RawMessage {
				return taskIDSchema("The id of the background task to stop, e.g. \"bash-1\".")
			})},
	}
}

// Lookup returns the tool named name.
func (r *Registry) Lookup(name string) (Tool, bool) {
	t, ok := r.byName[name]
	return t, ok
}

// All returns the tools in registration order. The slice is a copy.
func (r *Registry) All() []Tool { return append([]Tool(nil), r.tools...) }

// PromptSection is the tools' part of the system prompt of session s:
// each Prompter's section, in registration order.
func (r *Registry) PromptSection(s Session) string {
	var parts []string
	for _, t := range r.tools {
		if p, ok := t.(Prompter); ok {
			if s := p.PromptSection(s); s != "" {
				parts = append(parts, s)
			}
		}
	}
	return strings.Join(parts, "\n\n")
}

// Needs says what a call to the tool named name needs permission for. A
// tool that is not Permissioned, or a name the registry does not hold,
// gives the zero Need (NeedUndeclared). The error is the tool's: the
// arguments are malformed and Run will reject them.
func (r *Registry) Needs(name string, args json.RawMessage) (Need, error) {
	p, ok := r.byName[name].(Permissioned)
	if !ok {
		return Need{}, nil
	}
	return p.Needs(args)
}

// PresentCall is the card intent for a call to the tool named name, or
// the generic PresentUnknown card for a name the registry does not hold.
func (r *Registry) PresentCall(name string, args json.RawMessage) CallIntent {
	if t, ok := r.Lookup(name); ok {
		return t.PresentCall(args)
	}
	return PresentUnknown(name, args)
}

// PresentResult is the result intent for a call to the tool named name,
// or PresentUnknownResult's for a name the registry does not hold.
func (r *Registry) PresentResult(name string, args json.RawMessage, res event.Result) ResultIntent {
	if t, ok := r.Lookup(name); ok {
		return t.PresentResult(args, res)
	}
	return PresentUnknownResult(name, args, res)
}
