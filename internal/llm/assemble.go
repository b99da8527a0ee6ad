package llm

import (
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// assembler builds a Response from stream chunks. Tool calls arrive as
// fragments keyed by their index: the first fragment of a call carries its
// id and name, later ones pieces of the arguments.
type assembler struct {
	text      strings.Builder
	reasoning strings.Builder
	calls     []ToolCall
	byIndex   map[int]int // stream index → position in calls
	finish    FinishReason
	usage     Usage
}

// streamChunk is one event of the stream, with usage read in both the
// OpenAI and the DeepSeek shape.
type streamChunk struct {
	openai.ChatCompletionStreamResponse
	Usage *rawUsage `json:"usage"`
}

// rawUsage is a usage object as providers send it.
type rawUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// PromptCacheHit is DeepSeek's count of cached prompt tokens.
	PromptCacheHit int `json:"prompt_cache_hit_tokens"`
	PromptDetails  *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionDetails *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// addUsage keeps the usage a chunk carried (the last one wins: providers
// send it once, on the final chunk).
func (a *assembler) addUsage(u *rawUsage) {
	if u == nil {
		return
	}
	a.usage = Usage{
		PromptTokens:     max(u.PromptTokens, 0),
		CompletionTokens: max(u.CompletionTokens, 0),
		TotalTokens:      max(u.TotalTokens, 0),
		CachedTokens:     max(u.PromptCacheHit, 0),
		Known:            true,
	}
	if u.PromptDetails != nil && u.PromptDetails.CachedTokens > 0 {
		a.usage.CachedTokens = u.PromptDetails.CachedTokens
	}
	if u.CompletionDetails != nil {
		a.usage.ReasoningTokens = max(u.CompletionDetails.ReasoningTokens, 0)
	}
	if a.usage.TotalTokens == 0 {
		a.usage.TotalTokens = a.usage.PromptTokens + a.usage.CompletionTokens
	}
}

func (a *assembler) add(ch openai.ChatCompletionStreamChoice) {
	a.text.WriteString(ch.Delta.Content)
	a.text.WriteString(ch.Delta.Refusal)
	a.reasoning.WriteString(ch.Delta.ReasoningContent)
	for _, tc := range ch.Delta.ToolCalls {
		a.addCall(tc)
	}
	if fc := ch.Delta.FunctionCall; fc != nil { // legacy single function call
		a.addCall(openai.ToolCall{Index: new(int), Function: *fc})
	}
	switch ch.FinishReason {
	case "", openai.FinishReasonNull:
	case openai.FinishReasonFunctionCall:
		a.finish = FinishToolCalls
	default:
		a.finish = FinishReason(ch.FinishReason)
	}
}

func (a *assembler) addCall(tc openai.ToolCall) {
	pos := a.position(tc)
	c := &a.calls[pos]
	if tc.ID != "" {
		c.ID = tc.ID
	}
	if c.Name == "" {
		c.Name = tc.Function.Name
	}
	c.Args += tc.Function.Arguments
}

// position finds the call a fragment belongs to, opening a new one when the
// fragment starts a call.
func (a *assembler) position(tc openai.ToolCall) int {
	if tc.Index != nil {
		if pos, ok := a.byIndex[*tc.Index]; ok {
			return pos
		}
		if a.byIndex == nil {
			a.byIndex = map[int]int{}
		}
		a.byIndex[*tc.Index] = len(a.calls)
		a.calls = append(a.calls, ToolCall{})
		return len(a.calls) - 1
	}
	// No index (some compatible servers): a new id starts a new call.
	last := len(a.calls) - 1
	if last < 0 || (tc.ID != "" && a.calls[last].ID != "" && tc.ID != a.calls[last].ID) {
		a.calls = append(a.calls, ToolCall{})
		return len(a.calls) - 1
	}
	return last
}

// response is the Response assembled so far. Calls the provider sent without
// an id get one, so tool results can answer them.
func (a *assembler) response() Response {
	r := Response{
		Text:         a.text.String(),
		Reasoning:    a.reasoning.String(),
		FinishReason: a.finish,
		Usage:        a.usage,
	}
	if len(a.calls) > 0 {
		r.ToolCalls = make([]ToolCall, len(a.calls))
		copy(r.ToolCalls, a.calls)
		for i := range r.ToolCalls {
			if r.ToolCalls[i].ID == "" {
				r.ToolCalls[i].ID = fmt.Sprintf("call_%d", i)
			}
		}
	}
	return r
}

// endError judges a stream that reached EOF: a complete response carries a
// finish reason.
func (a *assembler) endError(chunks int) error {
	switch {
	case a.finish != "":
		return nil
	case chunks == 0:
		return &Error{Kind: ErrMalformed, Detail: "the response held no server-sent events"}
	default:
		return &Error{Kind: ErrConnection, Detail: "the stream ended before the response was complete"}
	}
}
