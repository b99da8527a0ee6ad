package agent

import (
	"encoding/json"

	"github.com/dsh-acp/dsh-acp/tools"
)

// Event is something that happened in a session. Events flow one way, to the
// session's Sink, which fans them out to the ACP emitter (live cards) and the
// journal (replay). Replay feeds recorded events back through the same
// emitter, so a reloaded session looks as it did live.
type Event interface{ isEvent() }

// Sink receives a session's events in order. Emit must not block for long:
// it runs on the turn's goroutine (and ToolOutput on the executor's).
type Sink interface{ Emit(Event) }

// SinkFunc adapts a function to Sink.
type SinkFunc func(Event)

func (f SinkFunc) Emit(e Event) { f(e) }

// UserPrompt is the user's prompt, rendered to the text the model reads.
type UserPrompt struct {
	Text string `json:"text"`
}

// TextDelta is a piece of the agent's answer as it streams.
type TextDelta struct {
	Text string `json:"text"`
}

// ThoughtDelta is a piece of the model's reasoning as it streams.
type ThoughtDelta struct {
	Text string `json:"text"`
}

// AssistantMessage is one complete model response (also emitted with the
// partial text when a stream is cancelled). Live sinks have already shown it
// through the deltas; the journal records it whole.
type AssistantMessage struct {
	Text      string         `json:"text,omitempty"`
	Reasoning string         `json:"reasoning,omitempty"`
	ToolCalls []ToolCallInfo `json:"toolCalls,omitempty"`
}

// ToolCallInfo names a tool call inside an AssistantMessage.
type ToolCallInfo struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"` // exactly as the model sent them (may be invalid JSON)
}

// ToolCall opens a tool call's card, before it runs. Direct marks a `!`
// command typed by the user (no model involved).
type ToolCall struct {
	ID     string          `json:"id"`
	Name   string          `json:"name"`
	Args   json.RawMessage `json:"args"`
	Direct bool            `json:"direct,omitempty"`
}

// ToolOutput is live output for a running call's card.
type ToolOutput struct {
	ID   string `json:"id"`
	Data string `json:"data"`
}

// ToolResult closes a tool call's card.
type ToolResult struct {
	ID     string          `json:"id"`
	Name   string          `json:"name"`
	Args   json.RawMessage `json:"args"`
	Result tools.Result    `json:"result"`
}

// Notice is context queued for the next model request (a background task's
// completion notice), recorded when it is delivered to the model.
type Notice struct {
	Text string `json:"text"`
}

// ErrorMessage is a message for the user that is not part of the model's
// conversation (a provider error, a missing configuration).
type ErrorMessage struct {
	Text string `json:"text"`
}

// TurnEnd ends a turn.
type TurnEnd struct {
	StopReason StopReason `json:"stopReason"`
}

// StopReason is why a turn ended, in ACP's vocabulary.
type StopReason string

const (
	EndTurn         StopReason = "end_turn"
	MaxTokens       StopReason = "max_tokens"
	MaxTurnRequests StopReason = "max_turn_requests"
	Refusal         StopReason = "refusal"
	Cancelled       StopReason = "cancelled"
)

func (UserPrompt) isEvent()       {}
func (TextDelta) isEvent()        {}
func (ThoughtDelta) isEvent()     {}
func (AssistantMessage) isEvent() {}
func (ToolCall) isEvent()         {}
func (ToolOutput) isEvent()       {}
func (ToolResult) isEvent()       {}
func (Notice) isEvent()           {}
func (ErrorMessage) isEvent()     {}
func (TurnEnd) isEvent()          {}
