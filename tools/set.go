package tools

import (
	"encoding/json"

	"github.com/dsh-acp/dsh-acp/executor"
)

// Set is the toolbox: the three bash tools over one executor, and the
// prompt section that goes with them. It is safe for concurrent use by any
// number of sessions.
type Set struct {
	tools  []Tool
	prompt string
}

// NewSet builds the tools over ex with cfg's limits (zero fields take their
// defaults). The texts state cfg's limits.
func NewSet(ex executor.Executor, cfg Config) *Set {
	cfg = cfg.withDefaults()
	txt := renderTexts(cfg)
	return &Set{
		tools: []Tool{
			&bash{ex: ex, cfg: cfg, desc: txt.bash, schema: bashSchema(cfg)},
			&bashOutput{ex: ex, cfg: cfg, desc: txt.bashOutput,
				schema: taskIDSchema("The id of the background task, e.g. \"bash-1\".")},
			&bashKill{ex: ex, desc: txt.bashKill,
				schema: taskIDSchema("The id of the background task to stop, e.g. \"bash-1\".")},
		},
		prompt: txt.prompt,
	}
}

// Lookup returns the tool named name.
func (s *Set) Lookup(name string) (Tool, bool) {
	for _, t := range s.tools {
		if t.Name() == name {
			return t, true
		}
	}
	return nil, false
}

// All returns the tools in a stable order: bash, bash_output, bash_kill.
// The slice is a copy.
func (s *Set) All() []Tool { return append([]Tool(nil), s.tools...) }

// PromptSection is the system-prompt section that goes after the base
// prompt: the habits the per-tool descriptions cannot carry (check every
// result's exit marker, workdir not cd, poll background tasks).
func (s *Set) PromptSection() string { return s.prompt }

// PresentCall is the card intent for a call to the tool named name, or the
// generic PresentUnknown card for a name the set does not hold.
func (s *Set) PresentCall(name string, args json.RawMessage) CallIntent {
	if t, ok := s.Lookup(name); ok {
		return t.PresentCall(args)
	}
	return PresentUnknown(name, args)
}

// PresentResult is the result intent for a call to the tool named name, or
// PresentUnknownResult's for a name the set does not hold.
func (s *Set) PresentResult(name string, args json.RawMessage, res Result) ResultIntent {
	if t, ok := s.Lookup(name); ok {
		return t.PresentResult(args, res)
	}
	return PresentUnknownResult(name, args, res)
}
