package agent

import "github.com/dsh-acp/dsh-acp/internal/llm"

// Model is the model the session's requests ask for ("" when neither
// Config.Model nor the client names one).
func (s *Session) Model() string {
	s.modelMu.Lock()
	defer s.modelMu.Unlock()
	return s.modelName
}

// SetModel switches the model of the session's later requests (a request
// already sent keeps its own); the context window follows the model. It
// never blocks behind a turn. The caller validates id and journals it.
func (s *Session) SetModel(id string) {
	s.modelMu.Lock()
	defer s.modelMu.Unlock()
	s.modelName = id
}

// window is model's context window, in tokens: Config.ContextWindow's
// answer, lowered to what the provider named when it refused a request.
func (s *Session) window(model string) int {
	w := s.cfg.ContextWindow(model)
	if w <= 0 {
		w = DefaultContextWindow
	}
	if l := s.acct.learnedWindow(model); l > 0 && l < w {
		w = l
	}
	return w
}

// threshold is the size, in tokens, past which a request to model is
// compacted first.
func (s *Session) threshold(model string) int {
	return int(float64(s.window(model)) * s.cfg.CompactThreshold)
}

// ContextWindow is the default Config.ContextWindow: llm.ContextWindow's
// table, else DefaultContextWindow.
func ContextWindow(model string) int {
	if w, ok := llm.ContextWindow(model); ok {
		return w
	}
	return DefaultContextWindow
}
