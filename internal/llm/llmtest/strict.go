package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
)

// Strictness says when the server enforces DeepSeek's thinking-mode rules
// (see SetStrict).
type Strictness int

const (
	// StrictAuto, the default, enforces the rules for DeepSeek model names
	// (deepseek-…), as DeepSeek's API does.
	StrictAuto Strictness = iota
	// StrictOn enforces them whatever the model.
	StrictOn
	// StrictOff never enforces them (a lenient OpenAI-compatible server).
	StrictOff
)

// StrictEnv names the environment variable that sets every new server's
// strictness: "on" (StrictOn: the rules for every model, a way to run a
// whole suite against them), "off" (StrictOff); anything else leaves
// StrictAuto.
const StrictEnv = "LLMTEST_STRICT"

func strictFromEnv() Strictness {
	switch os.Getenv(StrictEnv) {
	case "on":
		return StrictOn
	case "off":
		return StrictOff
	}
	return StrictAuto
}

// The answers of DeepSeek's API to requests that break the thinking-mode
// rules, word for word (HTTP 400, type and code invalid_request_error).
const (
	// MissingReasoningMessage answers a conversation in which an assistant
	// message with tool_calls has no reasoning_content.
	MissingReasoningMessage = "The `reasoning_content` in the thinking mode must be passed back to the API."
	// ToolChoiceMessage answers a tool_choice other than auto or none.
	ToolChoiceMessage = "Thinking mode does not support this tool_choice"
)

// AlteredReasoningMessage starts the fake's own refusal of a
// reasoning_content sent back different from what was streamed with the
// same tool calls. DeepSeek cannot see this (it keeps nothing between
// requests); the fake can, and refuses it so that tests catch reasoning that
// was not passed back verbatim.
const AlteredReasoningMessage = "llmtest: the reasoning_content sent back differs from what was streamed with tool calls"

// SetStrict sets when the rules of DeepSeek's thinking mode are enforced.
// A request is in thinking mode when the rules apply to its model and it
// does not say "thinking": {"type": "disabled"} (the legacy
// deepseek-chat is in thinking mode only when it says "enabled"). In
// thinking mode:
//   - every assistant message with tool_calls must carry
//     reasoning_content (an empty string is enough), else HTTP 400
//     MissingReasoningMessage;
//   - a reasoning_content sent with tool calls the server streamed must be
//     exactly what it streamed with them, else HTTP 400
//     AlteredReasoningMessage (the fake's own check);
//   - tool_choice may only be "auto" or "none", else HTTP 400
//     ToolChoiceMessage.
//
// Whenever the rules apply, thinking.type must be enabled or disabled and
// reasoning_effort one of DeepSeek's values, else HTTP 422.
//
// A refused request is recorded (Request.Refused) and consumes no scripted
// response. It fails the test unless ExpectRefusals was called.
func (s *Server) SetStrict(v Strictness) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.strict = v
}

// ExpectRefusals makes strict refusals part of the test: they are answered
// as DeepSeek would, without failing it.
func (s *Server) ExpectRefusals() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expectRefusals = true
}

// Refusals are the requests refused for breaking the rules, in order.
func (s *Server) Refusals() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Refused != "" {
			out = append(out, r)
		}
	}
	return out
}

// StreamedReasoning is the reasoning the server streamed with tool calls,
// keyed by the calls' ids joined with commas, every answer that made them
// in order.
func (s *Server) StreamedReasoning() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string][]string, len(s.streamed))
	for k, v := range s.streamed {
		out[k] = slices.Clone(v)
	}
	return out
}

// reasoningEfforts are the reasoning_effort values DeepSeek takes (it maps
// minimal to low, medium and xhigh to high, ultra to max).
var reasoningEfforts = []string{"minimal", "low", "medium", "high", "xhigh", "max", "ultra"}

// strictApplies reports whether the rules apply to a request for model.
// The caller holds s.mu.
func (s *Server) strictApplies(model string) bool {
	switch s.strict {
	case StrictOn:
		return true
	case StrictOff:
		return false
	}
	return strings.HasPrefix(model, "deepseek-")
}

// thinkingMode reports whether req, to which the rules apply, is in
// thinking mode.
func thinkingMode(req *Request) bool {
	if req.Thinking != nil {
		return req.Thinking.Type != "disabled"
	}
	return req.Model != "deepseek-chat"
}

// refusal is the answer to a request that breaks the rules, or "" and a
// zero status. The caller holds s.mu.
func (s *Server) refusal(req *Request) (int, string) {
	if !s.strictApplies(req.Model) {
		return 0, ""
	}
	if t := req.Thinking; t != nil && t.Type != "enabled" && t.Type != "disabled" {
		return http.StatusUnprocessableEntity, fmt.Sprintf("Invalid thinking.type %q: expected enabled or disabled", t.Type)
	}
	if e := req.ReasoningEffort; e != nil && !slices.Contains(reasoningEfforts, *e) {
		return http.StatusUnprocessableEntity, fmt.Sprintf("Invalid reasoning_effort %q: expected one of %s", *e, strings.Join(reasoningEfforts, ", "))
	}
	if !thinkingMode(req) {
		return 0, ""
	}
	if choice := strings.TrimSpace(string(req.ToolChoice)); choice != "" && choice != "null" &&
		choice != `"auto"` && choice != `"none"` {
		return http.StatusBadRequest, ToolChoiceMessage
	}
	for i, m := range req.Messages {
		if m.Role != "assistant" || len(m.ToolCalls) == 0 {
			continue
		}
		if !m.HasReasoning {
			return http.StatusBadRequest, MissingReasoningMessage
		}
		if sent, ok := s.streamed[m.callKey()]; ok && !slices.Contains(sent, m.ReasoningContent) {
			return http.StatusBadRequest, fmt.Sprintf("%s (message %d: sent %q, streamed %q)",
				AlteredReasoningMessage, i, m.ReasoningContent, sent[len(sent)-1])
		}
	}
	return 0, ""
}

// noteStreamed remembers the reasoning r streams with its tool calls. The
// caller holds s.mu.
func (s *Server) noteStreamed(r Response) {
	var ids []string
	var reasoning strings.Builder
	for _, c := range r.Chunks {
		reasoning.WriteString(c.Reasoning)
		for _, d := range c.Calls {
			if d.ID != "" {
				ids = append(ids, d.ID)
			}
		}
	}
	if len(ids) == 0 {
		return
	}
	if s.streamed == nil {
		s.streamed = map[string][]string{}
	}
	key := strings.Join(ids, ",")
	s.streamed[key] = append(s.streamed[key], reasoning.String())
}

// callKey is the ids of m's tool calls joined with commas.
func (m Message) callKey() string {
	ids := make([]string, len(m.ToolCalls))
	for i, c := range m.ToolCalls {
		ids[i] = c.ID
	}
	return strings.Join(ids, ",")
}

// strictError is DeepSeek's error body for message.
func strictError(status int, message string) Response {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": message, "type": "invalid_request_error", "param": nil, "code": "invalid_request_error",
	}})
	return Response{Status: status, Body: string(b)}
}

// UnmarshalJSON decodes a recorded message, noting whether it carried
// reasoning_content at all (HasReasoning).
func (m *Message) UnmarshalJSON(b []byte) error {
	type plain Message
	var probe struct {
		plain
		Reasoning *string `json:"reasoning_content"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return err
	}
	*m = Message(probe.plain)
	if probe.Reasoning != nil {
		m.ReasoningContent, m.HasReasoning = *probe.Reasoning, true
	}
	return nil
}

// ModelNotExist is DeepSeek's answer to a request for a model it does not
// serve: HTTP 400 "Model Not Exist".
func ModelNotExist() Response { return strictError(http.StatusBadRequest, "Model Not Exist") }
