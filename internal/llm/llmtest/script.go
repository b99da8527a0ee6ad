package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Response is one scripted answer.
type Response struct {
	// Status 0 or 200 streams Chunks as server-sent events; any other status
	// is an error response with Body.
	Status int
	// Body is the error body (empty: an OpenAI-style error object naming
	// the status). With status 200 a non-empty Body is written verbatim
	// instead of an event stream.
	Body string
	// Header holds extra response headers (Retry-After, …).
	Header http.Header
	Chunks []Chunk
	// NoDone leaves out the final "data: [DONE]".
	NoDone bool
	// Stall blocks after the chunks until the client goes away.
	Stall bool
	// Drop cuts the connection after the chunks, mid-stream.
	Drop bool
	// Delay is waited before anything is written, headers included (a
	// provider slow to answer, or, with a long Delay, a silent one).
	Delay time.Duration
	// Usage, when set, replaces the counted usage of a streamed answer. It
	// is sent only when the request asked for usage (and the server does not
	// ignore it).
	Usage *Usage
}

// Usage is the token accounting of a scripted answer.
type Usage struct {
	Prompt, Completion int
	// Cached is sent as prompt_tokens_details.cached_tokens and DeepSeek's
	// prompt_cache_hit_tokens.
	Cached int
	// Reasoning is sent as completion_tokens_details.reasoning_tokens.
	Reasoning int
}

// plan is what serving a response needs to know of its request.
type plan struct {
	model  string
	prompt int  // the request's prompt tokens
	usage  bool // send a usage chunk
}

// Chunk is one event of a stream.
type Chunk struct {
	Text      string
	Reasoning string
	Calls     []CallDelta
	// Finish is the finish_reason (stop, tool_calls, length, content_filter).
	Finish string
	// Raw, when set, is written verbatim instead of an event, e.g. a
	// ": keep-alive\n\n" comment or a malformed "data: {oops\n\n".
	Raw string
	// Delay is waited before the chunk is written (a slow provider).
	Delay time.Duration
}

// CallDelta is one fragment of a tool call. The first fragment of a call
// carries its ID and Name; later ones only more Args.
type CallDelta struct {
	Index    int
	ID, Name string
	Args     string
}

// Stream is a 200 event stream of chunks followed by [DONE].
func Stream(chunks ...Chunk) Response { return Response{Chunks: chunks} }

// Reply is a streamed text answer that ends with finish_reason stop; each
// part is its own chunk.
func Reply(parts ...string) Response {
	chunks := make([]Chunk, 0, len(parts)+1)
	for _, p := range parts {
		chunks = append(chunks, Say(p))
	}
	return Stream(append(chunks, Finish("stop"))...)
}

// Call is a tool call for Calls.
type Call struct{ ID, Name, Args string }

// Calls is a streamed message making the given tool calls, each call's
// arguments split into three fragments across chunks, ending with
// finish_reason tool_calls.
func Calls(calls ...Call) Response {
	var chunks []Chunk
	for i, c := range calls {
		third := len(c.Args) / 3
		chunks = append(chunks,
			Chunk{Calls: []CallDelta{{Index: i, ID: c.ID, Name: c.Name, Args: c.Args[:third]}}},
			Args(i, c.Args[third:2*third]),
			Args(i, c.Args[2*third:]))
	}
	return Stream(append(chunks, Finish("tool_calls"))...)
}

// Say is a chunk of answer text.
func Say(text string) Chunk { return Chunk{Text: text} }

// Think is a chunk of reasoning (reasoning_content).
func Think(text string) Chunk { return Chunk{Reasoning: text} }

// StartCall is the first fragment of tool call index.
func StartCall(index int, id, name, args string) Chunk {
	return Chunk{Calls: []CallDelta{{Index: index, ID: id, Name: name, Args: args}}}
}

// Args is a later argument fragment of tool call index.
func Args(index int, fragment string) Chunk {
	return Chunk{Calls: []CallDelta{{Index: index, Args: fragment}}}
}

// Finish is a chunk carrying only a finish reason.
func Finish(reason string) Chunk { return Chunk{Finish: reason} }

// KeepAlive is DeepSeek's SSE comment line.
func KeepAlive() Chunk { return Chunk{Raw: ": keep-alive\n\n"} }

// Raw is a chunk written verbatim.
func Raw(s string) Chunk { return Chunk{Raw: s} }

// Error is an error response with an OpenAI-style body carrying message.
func Error(status int, message string) Response {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": message, "type": "llmtest_error", "code": status,
	}})
	return Response{Status: status, Body: string(b)}
}

// Status is an error response with the given HTTP status and a default
// OpenAI-style body naming it, e.g. Status(501) or Status(503).With("Retry-After", "2").
func Status(code int) Response { return Response{Status: code} }

// ContextTooLong is the provider's HTTP 400 answer to a request of prompt
// tokens plus maxTokens that does not fit window, in the given wording.
func ContextTooLong(window, prompt, maxTokens int, wording Wording) Response {
	requested := prompt + maxTokens
	var msg, code string
	var param any
	switch wording {
	case OpenAIWording:
		msg = fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. "+
			"Please reduce the length of the messages.", window, requested)
		code, param = "context_length_exceeded", "messages"
	default:
		msg = fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens "+
			"(%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
			window, requested, prompt, maxTokens)
		code = "invalid_request_error"
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": msg, "type": "invalid_request_error", "param": param, "code": code,
	}})
	return Response{Status: http.StatusBadRequest, Body: string(b)}
}

// With returns r with a response header set.
func (r Response) With(key, value string) Response {
	h := r.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set(key, value)
	r.Header = h
	return r
}

func (r Response) serve(w http.ResponseWriter, req *http.Request, p plan) {
	model := p.model
	if !wait(req, r.Delay) {
		return
	}
	for k, vs := range r.Header {
		w.Header()[k] = vs
	}
	if r.Status != 0 && r.Status != http.StatusOK {
		if r.Body == "" {
			writeError(w, r.Status, http.StatusText(r.Status))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(r.Status)
		_, _ = w.Write([]byte(r.Body))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if r.Body != "" {
		_, _ = w.Write([]byte(r.Body))
		return
	}
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	_, _ = fmt.Fprintf(w, "data: %s\n\n", event(model, map[string]any{"role": "assistant", "content": ""}, ""))
	for _, c := range r.Chunks {
		if !wait(req, c.Delay) {
			return
		}
		if c.Raw != "" {
			_, _ = w.Write([]byte(c.Raw))
		} else {
			_, _ = fmt.Fprintf(w, "data: %s\n\n", c.event(model))
		}
		flush()
	}
	switch {
	case r.Stall:
		<-req.Context().Done()
		return
	case r.Drop:
		panic(http.ErrAbortHandler) // net/http closes the connection mid-body
	}
	if p.usage {
		_, _ = fmt.Fprintf(w, "data: %s\n\n", usageEvent(model, r.usage(p.prompt)))
		flush()
	}
	if !r.NoDone {
		_, _ = w.Write([]byte("data: [DONE]\n\n"))
		flush()
	}
}

// usage is the scripted usage, or else the counted one: prompt tokens and
// Tokens of the streamed text, reasoning and arguments.
func (r Response) usage(prompt int) Usage {
	if r.Usage != nil {
		return *r.Usage
	}
	n := 0
	for _, c := range r.Chunks {
		n += len(c.Text) + len(c.Reasoning)
		for _, d := range c.Calls {
			n += len(d.ID) + len(d.Name) + len(d.Args)
		}
	}
	return Usage{Prompt: prompt, Completion: Tokens(n)}
}

// usageEvent is the final chunk of a stream that asked for usage: no
// choices, the usage in OpenAI's shape plus DeepSeek's cache fields.
func usageEvent(model string, u Usage) []byte {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-llmtest", "object": "chat.completion.chunk", "created": 0,
		"model": model, "choices": []any{},
		"usage": map[string]any{
			"prompt_tokens": u.Prompt, "completion_tokens": u.Completion, "total_tokens": u.Prompt + u.Completion,
			"prompt_tokens_details":     map[string]any{"cached_tokens": u.Cached},
			"completion_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning},
			"prompt_cache_hit_tokens":   u.Cached, "prompt_cache_miss_tokens": u.Prompt - u.Cached,
		},
	})
	return b
}

func (c Chunk) event(model string) []byte {
	delta := map[string]any{}
	if c.Text != "" {
		delta["content"] = c.Text
	}
	if c.Reasoning != "" {
		delta["reasoning_content"] = c.Reasoning
	}
	if len(c.Calls) > 0 {
		calls := make([]map[string]any, len(c.Calls))
		for i, d := range c.Calls {
			fn := map[string]any{"arguments": d.Args}
			call := map[string]any{"index": d.Index, "function": fn}
			if d.ID != "" {
				call["id"] = d.ID
				call["type"] = "function"
			}
			if d.Name != "" {
				fn["name"] = d.Name
			}
			calls[i] = call
		}
		delta["tool_calls"] = calls
	}
	return event(model, delta, c.Finish)
}

func event(model string, delta map[string]any, finish string) []byte {
	choice := map[string]any{"index": 0, "delta": delta, "finish_reason": nil}
	if finish != "" {
		choice["finish_reason"] = finish
	}
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-llmtest", "object": "chat.completion.chunk", "created": 0,
		"model": model, "choices": []any{choice},
	})
	return b
}

// wait waits d, or less when the client goes away; it reports whether the
// client is still there.
func wait(req *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-req.Context().Done():
		return false
	}
}
