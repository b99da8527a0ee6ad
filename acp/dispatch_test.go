package acp

import (
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/turns"
)

// Preempt opens a prompt's turn from its one decode; a prompt whose params
// are refused opens none and carries its error to the handler.
func TestOpenPrompt(t *testing.T) {
	s := &Server{turns: turns.New()}
	for _, tc := range []struct {
		params string
		ok     bool
	}{
		{`{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}`, true},
		{`{"sessionId":"s","prompt":[{"type":"text","text":5}]}`, false},
		{`{"sessionId":"s"}`, false},
	} {
		pc := s.promptCall([]byte(tc.params))
		if (pc.err == nil) != tc.ok || (pc.turn != nil) != tc.ok {
			t.Errorf("%s: err %v, turn %v", tc.params, pc.err, pc.turn != nil)
		}
	}
	if n := s.turns.Pending("s"); n != 1 {
		t.Errorf("%d turns open, want 1", n)
	}
}
