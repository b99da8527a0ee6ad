package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/llm"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

const testKey = "sk-test-0123456789abcdef"

// sleeps records the delays a client waited instead of waiting them.
type sleeps struct {
	mu sync.Mutex
	ds []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ds = append(s.ds, d)
	return ctx.Err()
}

func (s *sleeps) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.ds...)
}

func newClient(t *testing.T, srv *llmtest.Server, sl *sleeps) *llm.Client {
	t.Helper()
	return llm.New(llm.Config{
		BaseURL:    srv.URL(),
		APIKey:     testKey,
		Model:      "test-model",
		MaxRetries: 2,
		Backoff:    func(attempt int) time.Duration { return time.Duration(attempt) * time.Millisecond },
		Sleep:      sl.sleep,
	})
}

func simpleRequest() llm.Request {
	return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
}

// collect runs one Stream and gathers its deltas.
func collect(t *testing.T, c *llm.Client, ctx context.Context, req llm.Request) (llm.Response, []llm.Delta, error) {
	t.Helper()
	var deltas []llm.Delta
	resp, err := c.Stream(ctx, req, func(d llm.Delta) { deltas = append(deltas, d) })
	return resp, deltas, err
}

func TestStreamSuccess(t *testing.T) {
	keepAlives := make([]llmtest.Chunk, 0, 400)
	for range 400 { // more than go-openai's default limit of 300
		keepAlives = append(keepAlives, llmtest.KeepAlive())
	}
	tests := []struct {
		name       string
		script     llmtest.Response
		wantResp   llm.Response
		wantDeltas []llm.Delta
	}{
		{
			name:       "text",
			script:     llmtest.Reply("Hel", "lo"),
			wantResp:   llm.Response{Text: "Hello", FinishReason: llm.FinishStop},
			wantDeltas: []llm.Delta{{Text: "Hel"}, {Text: "lo"}},
		},
		{
			name:       "keep-alive comments before the answer",
			script:     llmtest.Stream(append(keepAlives, llmtest.Say("ok"), llmtest.Finish("stop"))...),
			wantResp:   llm.Response{Text: "ok", FinishReason: llm.FinishStop},
			wantDeltas: []llm.Delta{{Text: "ok"}},
		},
		{
			name: "reasoning then text",
			script: llmtest.Stream(llmtest.Think("let me "), llmtest.Think("think"),
				llmtest.Say("42"), llmtest.Finish("stop")),
			wantResp:   llm.Response{Text: "42", Reasoning: "let me think", FinishReason: llm.FinishStop},
			wantDeltas: []llm.Delta{{Reasoning: "let me "}, {Reasoning: "think"}, {Text: "42"}},
		},
		{
			name: "several tool calls split across chunks",
			script: llmtest.Stream(
				llmtest.Say("Running."),
				llmtest.StartCall(0, "call_a", "bash", `{"comm`),
				llmtest.StartCall(1, "call_b", "bash_output", `{"task_id"`),
				llmtest.Args(0, `and":"ls"}`),
				llmtest.Args(1, `:"bash-1"}`),
				llmtest.Finish("tool_calls")),
			wantResp: llm.Response{
				Text: "Running.",
				ToolCalls: []llm.ToolCall{
					{ID: "call_a", Name: "bash", Args: `{"command":"ls"}`},
					{ID: "call_b", Name: "bash_output", Args: `{"task_id":"bash-1"}`},
				},
				FinishReason: llm.FinishToolCalls,
			},
			wantDeltas: []llm.Delta{{Text: "Running."}},
		},
		{
			name:       "length stop",
			script:     llmtest.Stream(llmtest.Say("cut"), llmtest.Finish("length")),
			wantResp:   llm.Response{Text: "cut", FinishReason: llm.FinishLength},
			wantDeltas: []llm.Delta{{Text: "cut"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t, tt.script)
			resp, deltas, err := collect(t, newClient(t, srv, &sleeps{}), t.Context(), simpleRequest())
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			resp.Usage = llm.Usage{} // TestUsage checks it
			if !reflect.DeepEqual(resp, tt.wantResp) {
				t.Errorf("response = %+v, want %+v", resp, tt.wantResp)
			}
			if !reflect.DeepEqual(deltas, tt.wantDeltas) {
				t.Errorf("deltas = %+v, want %+v", deltas, tt.wantDeltas)
			}
		})
	}
}

func TestStreamSendsRequest(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply("ok"))
	c := newClient(t, srv, &sleeps{})
	req := llm.Request{
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "sys"},
			{Role: llm.RoleUser, Content: "run ls"},
			{Role: llm.RoleAssistant, Reasoning: "kept", ToolCalls: []llm.ToolCall{{ID: "c1", Name: "bash", Args: `{"command":"ls"}`}}},
			{Role: llm.RoleTool, ToolCallID: "c1", Content: "a\nb"},
			{Role: llm.RoleAssistant, Content: "done"},
		},
		Tools: []llm.ToolDef{{Name: "bash", Description: "runs", Parameters: json.RawMessage(`{"type":"object"}`)}},
	}
	if _, err := c.Stream(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	got := srv.Last()
	if got.Model != "test-model" || !got.Stream {
		t.Errorf("model %q stream %v", got.Model, got.Stream)
	}
	if h := got.Header.Get("Authorization"); h != "Bearer "+testKey {
		t.Errorf("Authorization = %q", h)
	}
	want := "system: \"sys\"\nuser: \"run ls\"\nassistant: \"\" reasoning=\"kept\" call c1 bash({\"command\":\"ls\"})\n" +
		"tool[c1]: \"a\\nb\"\nassistant: \"done\"\n"
	if got.String() != want {
		t.Errorf("messages:\n%s\nwant:\n%s", got, want)
	}
	if names := got.ToolNames(); !reflect.DeepEqual(names, []string{"bash"}) {
		t.Errorf("tools = %v", names)
	}
}

func TestStreamModelOverride(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply("a"), llmtest.Reply("b"))
	c := newClient(t, srv, &sleeps{})
	req := simpleRequest()
	req.Model = "other-model"
	if _, err := c.Stream(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stream(t.Context(), simpleRequest(), nil); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if reqs[0].Model != "other-model" || reqs[1].Model != "test-model" {
		t.Errorf("models %q, %q; want other-model, then the client's test-model", reqs[0].Model, reqs[1].Model)
	}
}

func TestStreamErrors(t *testing.T) {
	tests := []struct {
		name     string
		script   []llmtest.Response
		wantKind error
		wantText string // the error names the cause
		requests int
		sleeps   []time.Duration
		partial  string
	}{
		{
			name:     "401 bad key, key echoed in body",
			script:   []llmtest.Response{llmtest.Error(401, "Authentication Fails, your api key: "+testKey+" is invalid")},
			wantKind: llm.ErrAuth, wantText: "rejected the API key (HTTP 401)", requests: 1,
		},
		{
			name:     "403",
			script:   []llmtest.Response{llmtest.Error(403, "forbidden")},
			wantKind: llm.ErrAuth, wantText: "HTTP 403", requests: 1,
		},
		{
			name:     "402 balance",
			script:   []llmtest.Response{llmtest.Error(402, "Insufficient Balance")},
			wantKind: llm.ErrBalance, wantText: "insufficient balance (HTTP 402): Insufficient Balance", requests: 1,
		},
		{
			name:     "400 bad request is not retried",
			script:   []llmtest.Response{llmtest.Error(400, "Model Not Exist")},
			wantKind: llm.ErrRequest, wantText: "Model Not Exist", requests: 1,
		},
		{
			name: "500 retried then exhausted",
			script: []llmtest.Response{llmtest.Error(500, "boom"), llmtest.Error(502, "boom"),
				{Status: 503, Body: "<html>down</html>"}},
			wantKind: llm.ErrServer, wantText: "server error (HTTP 503): <html>down</html>", requests: 3,
			sleeps: []time.Duration{time.Millisecond, 2 * time.Millisecond},
		},
		{
			name: "429 exhausted",
			script: []llmtest.Response{llmtest.Error(429, "slow down"), llmtest.Error(429, "slow down"),
				llmtest.Error(429, "slow down")},
			wantKind: llm.ErrRateLimited, wantText: "rate limiting requests (HTTP 429): slow down", requests: 3,
			sleeps: []time.Duration{time.Millisecond, 2 * time.Millisecond},
		},
		{
			name:     "429 asking for too long a wait",
			script:   []llmtest.Response{llmtest.Error(429, "slow down").With("Retry-After", "3600")},
			wantKind: llm.ErrRateLimited, wantText: "asked to wait 1h0m0s", requests: 1,
		},
		{
			name:     "malformed JSON event",
			script:   []llmtest.Response{llmtest.Stream(llmtest.Raw("data: {oops\n\n"))},
			wantKind: llm.ErrMalformed, wantText: "invalid JSON in the event stream", requests: 1,
		},
		{
			name:     "not an event stream",
			script:   []llmtest.Response{{Body: "<html>hello</html>\n"}},
			wantKind: llm.ErrMalformed, wantText: "no server-sent events", requests: 1,
		},
		{
			name: "error event inside the stream",
			script: []llmtest.Response{llmtest.Stream(llmtest.Say("par"),
				llmtest.Raw(`data: {"error":{"message":"overloaded","type":"server_error"}}`+"\n\n"))},
			wantKind: llm.ErrServer, wantText: "overloaded", requests: 1, partial: "par",
		},
		{
			name:     "dropped after output is not retried",
			script:   []llmtest.Response{{Chunks: []llmtest.Chunk{llmtest.Say("half")}, Drop: true}},
			wantKind: llm.ErrConnection, wantText: "connection to the model provider failed", requests: 1, partial: "half",
		},
		{
			name:     "stream ended without a finish reason",
			script:   []llmtest.Response{{Chunks: []llmtest.Chunk{llmtest.Say("half")}, NoDone: true}},
			wantKind: llm.ErrConnection, wantText: "ended before the response was complete", requests: 1, partial: "half",
		},
		{
			name:     "provider out of resources",
			script:   []llmtest.Response{llmtest.Stream(llmtest.Say("x"), llmtest.Finish("insufficient_system_resource"))},
			wantKind: llm.ErrServer, wantText: "out of inference resources", requests: 1, partial: "x",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t, tt.script...)
			sl := &sleeps{}
			resp, _, err := collect(t, newClient(t, srv, sl), t.Context(), simpleRequest())
			var e *llm.Error
			if !errors.As(err, &e) || !errors.Is(err, tt.wantKind) {
				t.Fatalf("err = %v (%T), want kind %v", err, err, tt.wantKind)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error %q does not contain %q", err, tt.wantText)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("error leaks the API key: %q", err)
			}
			if n := len(srv.Requests()); n != tt.requests {
				t.Errorf("requests = %d, want %d", n, tt.requests)
			}
			if got := sl.got(); !reflect.DeepEqual(got, tt.sleeps) {
				t.Errorf("sleeps = %v, want %v", got, tt.sleeps)
			}
			if resp.Text != tt.partial {
				t.Errorf("partial text = %q, want %q", resp.Text, tt.partial)
			}
		})
	}
}

func TestStreamRetriesThenSucceeds(t *testing.T) {
	tests := []struct {
		name   string
		first  llmtest.Response
		sleeps []time.Duration
	}{
		{"429 honours Retry-After seconds", llmtest.Error(429, "slow").With("Retry-After", "2"), []time.Duration{2 * time.Second}},
		{"429 honours retry-after-ms", llmtest.Error(429, "slow").With("Retry-After-Ms", "150"), []time.Duration{150 * time.Millisecond}},
		{"500 uses the backoff", llmtest.Error(500, "oops"), []time.Duration{time.Millisecond}},
		{"dropped before output", llmtest.Response{Drop: true}, []time.Duration{time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t, tt.first, llmtest.Reply("fine"))
			sl := &sleeps{}
			resp, deltas, err := collect(t, newClient(t, srv, sl), t.Context(), simpleRequest())
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if resp.Text != "fine" || len(deltas) != 1 {
				t.Errorf("response %+v deltas %+v", resp, deltas)
			}
			if got := sl.got(); !reflect.DeepEqual(got, tt.sleeps) {
				t.Errorf("sleeps = %v, want %v", got, tt.sleeps)
			}
			if n := len(srv.Requests()); n != 2 {
				t.Errorf("requests = %d, want 2", n)
			}
		})
	}
}

func TestStreamRealBackoffWaits(t *testing.T) {
	// The default Sleep really waits, and a cancel cuts the wait short.
	srv := llmtest.New(t, llmtest.Error(500, "a"), llmtest.Reply("ok"))
	c := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: testKey,
		Backoff: func(int) time.Duration { return 5 * time.Millisecond }})
	resp, err := c.Stream(t.Context(), simpleRequest(), nil)
	if err != nil || resp.Text != "ok" {
		t.Fatalf("resp %+v err %v", resp, err)
	}

	srv = llmtest.New(t, llmtest.Error(500, "a"))
	c = llm.New(llm.Config{BaseURL: srv.URL(), APIKey: testKey,
		Backoff: func(int) time.Duration { return time.Hour }, MaxRetryWait: 2 * time.Hour})
	ctx, cancel := context.WithCancel(t.Context())
	arrived := srv.Arrived()
	go func() {
		<-arrived
		cancel()
	}()
	if _, err := c.Stream(ctx, simpleRequest(), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestStreamCancelDuringStall(t *testing.T) {
	srv := llmtest.New(t, llmtest.Response{Chunks: []llmtest.Chunk{llmtest.Say("partial")}, Stall: true})
	c := newClient(t, srv, &sleeps{})
	ctx, cancel := context.WithCancel(t.Context())
	resp, err := c.Stream(ctx, simpleRequest(), func(llm.Delta) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if resp.Text != "partial" {
		t.Errorf("partial text = %q", resp.Text)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("requests = %d, want 1 (no retry after cancel)", n)
	}
}

// idleClient aborts a request after idle of silence.
func idleClient(srv *llmtest.Server, idle time.Duration, retries int) *llm.Client {
	return llm.New(llm.Config{BaseURL: srv.URL(), APIKey: testKey, Model: "test-model", MaxRetries: retries,
		IdleTimeout: idle, Backoff: func(int) time.Duration { return time.Millisecond }, Sleep: (&sleeps{}).sleep})
}

// A provider that goes silent mid-answer ends the stream with a clear
// connection error instead of hanging the turn; the partial text is kept.
func TestStreamIdleAfterOutputEnds(t *testing.T) {
	srv := llmtest.New(t, llmtest.Response{Chunks: []llmtest.Chunk{llmtest.Say("partial")}, Stall: true})
	start := time.Now()
	resp, err := idleClient(srv, 150*time.Millisecond, 2).Stream(t.Context(), simpleRequest(), nil)
	if !errors.Is(err, llm.ErrConnection) || !strings.Contains(err.Error(), "sent nothing for 150ms") {
		t.Fatalf("err = %v, want a connection error naming the silence", err)
	}
	if resp.Text != "partial" || len(srv.Requests()) != 1 {
		t.Errorf("text %q after %d requests (no retry once output streamed)", resp.Text, len(srv.Requests()))
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v", took)
	}
}

// Silence before any output is retried like a dropped connection.
func TestStreamIdleBeforeOutputRetries(t *testing.T) {
	srv := llmtest.New(t, llmtest.Response{Stall: true}, llmtest.Reply("second try"))
	resp, err := idleClient(srv, 100*time.Millisecond, 2).Stream(t.Context(), simpleRequest(), nil)
	if err != nil || resp.Text != "second try" || len(srv.Requests()) != 2 {
		t.Fatalf("err %v text %q requests %d", err, resp.Text, len(srv.Requests()))
	}
}

// Keep-alive comments count as life: a slow but talking provider is fine.
func TestStreamKeepAlivesResetTheIdleTimer(t *testing.T) {
	var chunks []llmtest.Chunk
	for range 6 {
		chunks = append(chunks, llmtest.Chunk{Raw: ": keep-alive\n\n", Delay: 60 * time.Millisecond})
	}
	chunks = append(chunks, llmtest.Say("late"), llmtest.Finish("stop"))
	srv := llmtest.New(t, llmtest.Stream(chunks...))
	resp, err := idleClient(srv, 200*time.Millisecond, -1).Stream(t.Context(), simpleRequest(), nil)
	if err != nil || resp.Text != "late" {
		t.Fatalf("err %v text %q", err, resp.Text)
	}
}
