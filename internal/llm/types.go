package llm

import (
	"encoding/json"
	"fmt"
	"time"
)

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
	// Reasoning is sent as reasoning_content, verbatim, on assistant
	// messages: always on one with ToolCalls (an empty string when it is
	// empty: DeepSeek's thinking mode refuses, with HTTP 400, a
	// conversation where a tool-call message lacks the key), else when set
	// (DeepSeek ignores it there). It is never sent on other roles.
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
	// Model, when set, is asked for instead of the client's model (a
	// session that switched models).
	Model    string
	Messages []Message
	Tools    []ToolDef
	// Thinking, when set, is asked for instead of the client's
	// Config.Thinking. It is not sent to a model whose provider refused it
	// (Client.ThinkingRefused).
	Thinking Thinking
	// OnRetry, when set, is told about each retry before its wait begins,
	// on the caller's goroutine, so the user can see it ("retrying in 2s
	// (HTTP 503)"). It must not block for long: the wait starts after it
	// returns.
	OnRetry func(RetryInfo)
}

// RetryInfo describes a retry Stream is about to make.
type RetryInfo struct {
	// Attempt is the attempt that failed, from 1; the retry is Attempt+1.
	Attempt int
	// Attempts is the most attempts Stream will make (MaxRetries + 1).
	Attempts int
	// Delay is the wait before the retry.
	Delay time.Duration
	// Cause is the failure in a few words: "HTTP 503", "connection reset",
	// "no data for 2m0s".
	Cause string
	// Err is the failure, an *Error (its Retryable reports true).
	Err error
}

// String is a notice for the user: "retrying in 2s (HTTP 503), attempt 2 of 4".
func (r RetryInfo) String() string {
	return fmt.Sprintf("retrying in %s (%s), attempt %d of %d", roundDelay(r.Delay), r.Cause, r.Attempt+1, r.Attempts)
}

// roundDelay keeps a delay readable: whole seconds from a second up,
// milliseconds below.
func roundDelay(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
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
	// Usage is the provider's token count for this request; Usage.Known is
	// false when the provider sent none.
	Usage Usage
	// ThinkingRefused is set on the one response whose request found the
	// provider refusing the thinking parameters (an *Error of kind
	// ErrThinkingRefused, with the provider's words): the request was sent
	// again without them, and later ones leave them out. The caller says so
	// once.
	ThinkingRefused *Error
}

// Usage is the token accounting of one response, as the provider reported
// it (stream_options.include_usage).
type Usage struct {
	// PromptTokens is the size of the request: everything now in context
	// before the answer.
	PromptTokens int
	// CompletionTokens is the size of the answer, reasoning included.
	CompletionTokens int
	// TotalTokens is PromptTokens + CompletionTokens (computed when the
	// provider left it out).
	TotalTokens int
	// CachedTokens is the part of PromptTokens served from the provider's
	// prompt cache (OpenAI's prompt_tokens_details.cached_tokens, DeepSeek's
	// prompt_cache_hit_tokens); 0 when not reported.
	CachedTokens int
	// ReasoningTokens is the part of CompletionTokens spent reasoning
	// (completion_tokens_details.reasoning_tokens); 0 when not reported.
	ReasoningTokens int
	// Known is true when the provider reported usage. A provider that
	// ignores stream_options sends none: every count is 0 and Known false,
	// which means unknown, not empty.
	Known bool
}

// Model is one model the provider offers (GET /models).
type Model struct {
	ID string
	// OwnedBy is the provider's owner field, often the organisation.
	OwnedBy string
}
