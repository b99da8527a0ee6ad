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

// Thinking is the thinking setting of the session's requests (llm's
// ThinkingDefault, "", leaves the provider's default).
func (s *Session) Thinking() llm.Thinking {
	s.modelMu.Lock()
	defer s.modelMu.Unlock()
	return s.thinking
}

// SetThinking sets the thinking setting of the session's later requests,
// as SetModel does the model: never behind a turn; the caller validates
// (llm.ParseThinking) and journals it.
func (s *Session) SetThinking(t llm.Thinking) {
	s.modelMu.Lock()
	defer s.modelMu.Unlock()
	s.thinking = t
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
