package llm

import "encoding/json"

// Role is a chat message's author.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one chat message as the provider reads it. The client sends every
// field that is set; deciding what to leave out (old reasoning, elided
// output) is the caller's job.
type Message struct {
	Role    Role
	Content string
	// Reasoning is sent as reasoning_content when set (assistant messages).
	Reasoning string
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall
	// ToolCallID is the call a tool message answers.
	ToolCallID string
}

// ToolCall is one function call the model made.
type ToolCall struct {
	ID   string
	Name string
	// Args is the arguments text exactly as the model streamed it (it may be
	// invalid JSON).
	Args string
}

// ToolDef is a tool the model may call.
type ToolDef struct {
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments.
	Parameters json.RawMessage
}

// Request is one chat completion request.
type Request struct {
	Messages []Message
	Tools    []ToolDef
}

// Delta is a piece of the response as it streams.
type Delta struct {
	Text      string
	Reasoning string
}

// FinishReason is why the provider ended a response.
type FinishReason string

const (
	FinishStop          FinishReason = "stop"
	FinishLength        FinishReason = "length"
	FinishToolCalls     FinishReason = "tool_calls"
	FinishContentFilter FinishReason = "content_filter"
)

// Response is a model response assembled from its stream.
type Response struct {
	Text      string
	Reasoning string
	// ToolCalls are in the order the model issued them (by stream index).
	ToolCalls []ToolCall
	// FinishReason is empty when the stream ended before the provider said.
	FinishReason FinishReason
}
