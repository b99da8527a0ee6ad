// Package llmtest is a scriptable fake of an OpenAI-compatible chat
// completions endpoint for tests: each request is answered by the next
// Response of a script (streamed text, reasoning, tool-call fragments,
// keep-alive comments, HTTP errors, stalls, dropped connections, malformed
// SSE), and every request is recorded, decoded, for assertions.
//
// Point a client at URL(); the server answers POST …/chat/completions.
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
}

// New starts a server answering with script, in order, and closes it when
// the test ends. A request beyond the script fails the test and gets a 500.
func New(t testing.TB, script ...Response) *Server {
	t.Helper()
	s := &Server{t: t, script: script, arrived: make(chan struct{})}
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

// Arrived returns a channel closed when the next request arrives.
func (s *Server) Arrived() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.arrived
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	req := Request{Header: r.Header.Clone(), Raw: body}
	if err := json.Unmarshal(body, &req); err != nil {
		s.t.Errorf("llmtest: request body is not JSON: %v", err)
	}
	resp, ok := s.next(req)
	if !ok {
		s.t.Errorf("llmtest: request %d has no scripted response", len(s.Requests()))
		writeError(w, http.StatusInternalServerError, "llmtest: no scripted response left")
		return
	}
	resp.serve(w, r, req.Model)
}

// next records req and pops the next scripted response.
func (s *Server) next(req Request) (Response, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	close(s.arrived)
	s.arrived = make(chan struct{})
	if len(s.script) == 0 {
		return Response{}, false
	}
	r := s.script[0]
	s.script = s.script[1:]
	return r, true
}

// Request is a recorded request, decoded.
type Request struct {
	Model    string          `json:"model"`
	Stream   bool            `json:"stream"`
	Messages []Message       `json:"messages"`
	Tools    []Tool          `json:"tools"`
	Header   http.Header     `json:"-"`
	Raw      json.RawMessage `json:"-"`
}

// Message is a recorded chat message.
type Message struct {
	Role             string     `json:"role"`
	Content          string     `json:"content"`
	ReasoningContent string     `json:"reasoning_content"`
	ToolCalls        []ToolCall `json:"tool_calls"`
	ToolCallID       string     `json:"tool_call_id"`
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
