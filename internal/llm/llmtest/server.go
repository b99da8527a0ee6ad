// Package llmtest is a scriptable fake of an OpenAI-compatible chat
// completions endpoint for tests: each request is answered by the next
// Response of a script (streamed text, reasoning, tool-call fragments,
// keep-alive comments, HTTP errors with any status and headers such as
// Retry-After, stalls, dropped connections, malformed SSE), and every request
// is recorded — decoded, and its body byte for byte (Request.Raw) — for
// assertions.
//
// Point a client at URL(); the server answers POST …/chat/completions and
// GET …/models (see SetModels; 404 until set). Respond adds an answering
// function for requests past the script's end.
//
// Like a real provider it can also:
//   - report usage: a request with stream_options.include_usage gets a
//     final chunk with no choices and a usage object (OpenAI's shape plus
//     DeepSeek's prompt_cache_hit_tokens), unless IgnoreUsage was called.
//     The counts follow one documented rule, Tokens: prompt tokens are the
//     request body's size, completion tokens the streamed text, reasoning
//     and arguments, each in bytes/4 rounded up. Response.Usage overrides
//     them.
//   - enforce a context window (SetContextWindow): a request whose prompt
//     tokens plus max_tokens pass the window is answered with the
//     provider's HTTP 400 context-length error in DeepSeek's or OpenAI's
//     wording, without consuming a scripted response.
//   - enforce DeepSeek's thinking-mode rules (SetStrict; on by default for
//     deepseek-… models): an assistant message with tool calls that lost
//     its reasoning_content, reasoning sent back other than it was
//     streamed, or a forcing tool_choice is refused with DeepSeek's HTTP
//     400 and words, and fails the test unless ExpectRefusals was called.
//
// Known limits: every chat request must stream (stream: false is answered
// with a stream anyway); only choice 0 is produced. The strict mode knows
// the rules DeepSeek documents and the refusals it is known to send, not
// the whole of its validation: it does not check roles, message order or
// tool schemas, and it takes any reasoning on answers without tool calls.
// Its verbatim check keys what it streamed by the calls' ids, so a script
// that reuses ids with other reasoning is accepted with either.
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Server is a fake chat completions endpoint. It is safe for concurrent use.
type Server struct {
	t   testing.TB
	srv *httptest.Server

	mu       sync.Mutex
	script   []Response
	requests []Request
	arrived  chan struct{} // closed and replaced on each request

	ignoreUsage bool
	window      int // 0: no context window enforced
	wording     Wording

	responder func(Request) Response // answers when the script is empty

	strict         Strictness
	expectRefusals bool
	streamed       map[string][]string // reasoning streamed with tool calls, by call ids

	models         []string
	modelsSet      bool
	modelsFailure  *Response
	modelsRequests int
}

// New starts a server answering with script, in order, and closes it when
// the test ends. A request beyond the script fails the test and gets a 500.
func New(t testing.TB, script ...Response) *Server {
	t.Helper()
	s := &Server{t: t, script: script, arrived: make(chan struct{}), strict: strictFromEnv()}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// URL is the base URL to configure a client with.
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server, cutting open streams. It is safe to call twice.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Respond makes f answer every chat request the script has no response
// left for, instead of failing the test: a long test can answer from what
// each request says. f gets the recorded request and may be called from
// several goroutines at once. nil turns it off.
func (s *Server) Respond(f func(Request) Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.responder = f
}

// Push appends responses to the script.
func (s *Server) Push(rs ...Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, rs...)
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Last returns the latest request; it fails the test when there was none.
func (s *Server) Last() Request {
	s.t.Helper()
	reqs := s.Requests()
	if len(reqs) == 0 {
		s.t.Fatal("llmtest: no request received")
	}
	return reqs[len(reqs)-1]
}

// Remaining is how many scripted responses have not been served.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script)
}

// Arrived returns a channel closed when the next request (chat or models)
// arrives.
func (s *Server) Arrived() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.arrived
}

// IgnoreUsage makes the server behave like a provider that ignores
// stream_options: no usage chunk is ever sent.
func (s *Server) IgnoreUsage() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ignoreUsage = true
}

// Wording is the shape of a context-too-long answer.
type Wording int

const (
	// DeepSeekWording: "This model's maximum context length is N tokens.
	// However, you requested M tokens (P in the messages, C in the
	// completion). Please reduce the length of the messages or completion."
	// with type and code "invalid_request_error".
	DeepSeekWording Wording = iota
	// OpenAIWording: "This model's maximum context length is N tokens.
	// However, your messages resulted in M tokens. Please reduce the length
	// of the messages." with code "context_length_exceeded".
	OpenAIWording
)

// SetContextWindow makes the server refuse, with HTTP 400 in wording, every
// chat request whose prompt tokens (Tokens of the body's size) plus its
// max_tokens pass window tokens. Such a request is recorded (OverWindow set)
// but consumes no scripted response. 0 turns the check off.
func (s *Server) SetContextWindow(window int, wording Wording) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.window, s.wording = window, wording
}

// SetModels makes GET …/models list ids (until then it answers 404), and
// ends a FailModels.
func (s *Server) SetModels(ids ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models, s.modelsSet, s.modelsFailure = append([]string(nil), ids...), true, nil
}

// FailModels makes every GET …/models answer r (an error response, or a
// 200 with a Body that is no models list) until SetModels.
func (s *Server) FailModels(r Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.modelsFailure = &r
}

// ModelsRequests is how many GET …/models requests arrived.
func (s *Server) ModelsRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.modelsRequests
}

// Tokens is the fake's token count of n bytes: n/4 rounded up.
func Tokens(n int) int { return (n + 3) / 4 }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models"):
		s.serveModels(w, r)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions"):
		s.serveChat(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) serveChat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	req := Request{Header: r.Header.Clone(), Raw: body, PromptTokens: Tokens(len(body))}
	if err := json.Unmarshal(body, &req); err != nil {
		s.t.Errorf("llmtest: request body is not JSON: %v", err)
	}
	resp, plan, ok := s.next(&req)
	if !ok {
		s.mu.Lock()
		f := s.responder
		s.mu.Unlock()
		if f != nil {
			resp = f(req)
			s.mu.Lock()
			s.noteStreamed(resp)
			s.mu.Unlock()
			resp.serve(w, r, plan)
			return
		}
		s.t.Errorf("llmtest: request %d has no scripted response", len(s.Requests()))
		writeError(w, http.StatusInternalServerError, "llmtest: no scripted response left")
		return
	}
	resp.serve(w, r, plan)
}

// next records req and picks its answer: DeepSeek's refusal when req
// breaks the thinking-mode rules (SetStrict), the context-too-long error
// when req passes the window, else the next scripted response.
func (s *Server) next(req *Request) (Response, plan, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := plan{model: req.Model, prompt: req.PromptTokens,
		usage: req.AsksUsage() && !s.ignoreUsage}
	status, refused := s.refusal(req)
	req.Refused = refused
	requested := req.PromptTokens + req.MaxTokens
	req.OverWindow = refused == "" && s.window > 0 && requested > s.window
	s.requests = append(s.requests, *req)
	close(s.arrived)
	s.arrived = make(chan struct{})
	switch {
	case refused != "":
		if !s.expectRefusals {
			s.t.Errorf("llmtest: request %d broke DeepSeek's thinking-mode rules: HTTP %d %s\n%s",
				len(s.requests), status, refused, req)
		}
		return strictError(status, refused), p, true
	case req.OverWindow:
		return ContextTooLong(s.window, req.PromptTokens, req.MaxTokens, s.wording), p, true
	case len(s.script) == 0:
		return Response{}, p, false
	}
	r := s.script[0]
	s.script = s.script[1:]
	s.noteStreamed(r)
	return r, p, true
}

func (s *Server) serveModels(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.modelsRequests++
	close(s.arrived)
	s.arrived = make(chan struct{})
	ids, set, failure := s.models, s.modelsSet, s.modelsFailure
	s.mu.Unlock()
	switch {
	case failure != nil:
		failure.serve(w, r, plan{})
	case !set:
		writeError(w, http.StatusNotFound, "llmtest: no models configured")
	default:
		data := make([]map[string]any, len(ids))
		for i, id := range ids {
			data[i] = map[string]any{"id": id, "object": "model", "owned_by": "llmtest"}
		}
		b, _ := json.Marshal(map[string]any{"object": "list", "data": data})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	}
}

// Request is a recorded request, decoded.
type Request struct {
	Model         string         `json:"model"`
	Stream        bool           `json:"stream"`
	MaxTokens     int            `json:"max_tokens"`
	StreamOptions *StreamOptions `json:"stream_options"`
	Messages      []Message      `json:"messages"`
	Tools         []Tool         `json:"tools"`
	// ToolChoice is the tool_choice field as sent (nil when absent).
	ToolChoice json.RawMessage `json:"tool_choice"`
	// Thinking is the thinking field (nil when absent).
	Thinking *ThinkingParam `json:"thinking"`
	// ReasoningEffort is the reasoning_effort field (nil when absent).
	ReasoningEffort *string     `json:"reasoning_effort"`
	Header          http.Header `json:"-"`
	// Raw is the request body exactly as received, for byte-for-byte
	// comparisons of two requests.
	Raw json.RawMessage `json:"-"`
	// PromptTokens is the fake's count of the request: Tokens(len(Raw)).
	PromptTokens int `json:"-"`
	// OverWindow is set when the request passed the window set by
	// SetContextWindow and was refused.
	OverWindow bool `json:"-"`
	// Refused is the message of the server's refusal when the request
	// broke DeepSeek's thinking-mode rules (see SetStrict), else "".
	Refused string `json:"-"`
}

// ThinkingParam is a recorded thinking field.
type ThinkingParam struct {
	Type string `json:"type"`
}

// StreamOptions is a recorded stream_options field.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// AsksUsage reports whether the request asked for usage in the stream.
func (r Request) AsksUsage() bool { return r.StreamOptions != nil && r.StreamOptions.IncludeUsage }

// Message is a recorded chat message.
type Message struct {
	Role             string     `json:"role"`
	Content          string     `json:"content"`
	ReasoningContent string     `json:"reasoning_content"`
	ToolCalls        []ToolCall `json:"tool_calls"`
	ToolCallID       string     `json:"tool_call_id"`
	// HasReasoning reports that the message carried reasoning_content
	// (perhaps empty); ReasoningContent alone cannot tell.
	HasReasoning bool `json:"-"`
}

// ToolCall is a recorded assistant tool call.
type ToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Tool is a recorded tool definition.
type Tool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// ToolNames lists the tools the request offered.
func (r Request) ToolNames() []string {
	names := make([]string, len(r.Tools))
	for i, t := range r.Tools {
		names[i] = t.Function.Name
	}
	return names
}

// String renders the conversation compactly, one message a line, for test
// failure output.
func (r Request) String() string {
	var b strings.Builder
	for _, m := range r.Messages {
		fmt.Fprintf(&b, "%s", m.Role)
		if m.ToolCallID != "" {
			fmt.Fprintf(&b, "[%s]", m.ToolCallID)
		}
		fmt.Fprintf(&b, ": %q", m.Content)
		if m.ReasoningContent != "" {
			fmt.Fprintf(&b, " reasoning=%q", m.ReasoningContent)
		}
		for _, tc := range m.ToolCalls {
			fmt.Fprintf(&b, " call %s %s(%s)", tc.ID, tc.Function.Name, tc.Function.Arguments)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "llmtest"}})
	_, _ = w.Write(b)
}
