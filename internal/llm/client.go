// Package llm is the model client: streaming chat completions with tool calls
// against an OpenAI-compatible API (DeepSeek by default), on
// github.com/sashabaranov/go-openai. It classifies provider failures into a
// few sentinel errors, retries the transient ones before any output has
// streamed, and keeps the API key out of every error it returns.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.uber.org/zap"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultBaseURL      = "https://api.deepseek.com"
	DefaultModel        = "deepseek-chat"
	DefaultMaxRetries   = 3
	DefaultMaxRetryWait = time.Minute
	// DefaultIdleTimeout is how long a silent provider is waited for.
	DefaultIdleTimeout = 2 * time.Minute
)

// emptyMessagesLimit is how many non-data lines (SSE comments such as
// DeepSeek's ": keep-alive", blank separators) may precede one event.
// go-openai's default of 300 breaks long keep-alive waits; this cap only
// guards against a body that never sends data.
const emptyMessagesLimit = 100_000

// Config configures a Client. Zero fields take the defaults.
type Config struct {
	// BaseURL is the API root; requests go to BaseURL + "/chat/completions".
	BaseURL string
	// APIKey is sent as a bearer token. It never appears in an error.
	APIKey string
	Model  string
	// HTTPClient sends the requests; nil uses a client without an overall
	// timeout (a stream lasts as long as the model writes).
	HTTPClient *http.Client
	// MaxTokens caps each response; 0 leaves the provider's default.
	MaxTokens int
	// MaxRetries bounds the retries of a request that failed transiently
	// (429, 5xx, a dropped connection) before any output streamed. 0 means
	// DefaultMaxRetries; negative means none.
	MaxRetries int
	// Backoff is the delay before retry number attempt (1-based) when the
	// provider named none; nil is exponential from 1 s, capped at 30 s.
	Backoff func(attempt int) time.Duration
	// MaxRetryWait is the longest delay honoured; a provider asking for a
	// longer one (Retry-After) ends the retries. 0 means DefaultMaxRetryWait.
	MaxRetryWait time.Duration
	// Sleep waits d or until ctx is done; nil uses a timer. Tests record the
	// delays through it.
	Sleep func(ctx context.Context, d time.Duration) error
	// IdleTimeout aborts a request when the provider sends nothing (no
	// headers, no bytes — keep-alive comments count) for this long: a
	// retryable connection failure before any output, a clear error after.
	// 0 means DefaultIdleTimeout; negative means unbounded.
	IdleTimeout time.Duration
	// Logger receives retry and failure logs (never the key or content).
	Logger *zap.Logger
}

// Client streams chat completions. It is safe for concurrent use.
type Client struct {
	api          *openai.Client
	model        string
	maxTokens    int
	maxRetries   int
	backoff      func(int) time.Duration
	maxRetryWait time.Duration
	sleep        func(context.Context, time.Duration) error
	log          *zap.Logger
	secret       scrubber
}

// New returns a Client for cfg.
func New(cfg Config) *Client {
	c := &Client{
		model:        cfg.Model,
		maxTokens:    cfg.MaxTokens,
		maxRetries:   cfg.MaxRetries,
		backoff:      cfg.Backoff,
		maxRetryWait: cfg.MaxRetryWait,
		sleep:        cfg.Sleep,
		log:          cfg.Logger,
		secret:       scrubber(cfg.APIKey),
	}
	if c.model == "" {
		c.model = DefaultModel
	}
	switch {
	case c.maxRetries == 0:
		c.maxRetries = DefaultMaxRetries
	case c.maxRetries < 0:
		c.maxRetries = 0
	}
	if c.backoff == nil {
		c.backoff = exponentialBackoff
	}
	if c.maxRetryWait <= 0 {
		c.maxRetryWait = DefaultMaxRetryWait
	}
	if c.sleep == nil {
		c.sleep = sleepCtx
	}
	if c.log == nil {
		c.log = zap.NewNop()
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	oc := openai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = cfg.BaseURL
	if oc.BaseURL == "" {
		oc.BaseURL = DefaultBaseURL
	}
	idle := cfg.IdleTimeout
	if idle == 0 {
		idle = DefaultIdleTimeout
	}
	oc.HTTPClient = statusDoer{client: hc, now: time.Now, idle: max(idle, 0)}
	oc.EmptyMessagesLimit = emptyMessagesLimit
	c.api = openai.NewClientWithConfig(oc)
	return c
}

// Model is the model the client asks for.
func (c *Client) Model() string { return c.model }

// Stream sends req and streams the response: onDelta (may be nil) receives
// text and reasoning pieces as they arrive, on the caller's goroutine.
//
// Stream always returns what was assembled so far, also with an error. The
// error is ctx.Err() when ctx ended, otherwise an *Error (see the sentinel
// errors). A transient failure (429, 5xx, a dropped connection) is retried
// up to MaxRetries times, but only while nothing has reached onDelta.
func (c *Client) Stream(ctx context.Context, req Request, onDelta func(Delta)) (Response, error) {
	oreq := c.chatRequest(req)
	emitted := false
	on := func(d Delta) {
		emitted = true
		if onDelta != nil {
			onDelta(d)
		}
	}
	for attempt := 1; ; attempt++ {
		start := time.Now()
		resp, err := c.streamOnce(ctx, oreq, on)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return resp, ctx.Err()
		}
		e := c.classify(err)
		if emitted || attempt > c.maxRetries || !e.retryable() {
			c.log.Warn("model request failed", zap.Int("attempt", attempt),
				zap.Int("status", e.Status), zap.String("error", e.Error()),
				zap.Duration("elapsed", time.Since(start)))
			return resp, e
		}
		delay := e.RetryAfter
		if delay == 0 {
			delay = c.backoff(attempt)
		}
		if delay > c.maxRetryWait {
			e.Detail = fmt.Sprintf("%s (asked to wait %s)", e.Detail, delay.Round(time.Second))
			return resp, e
		}
		c.log.Info("model request failed; retrying", zap.Int("attempt", attempt),
			zap.Int("status", e.Status), zap.Duration("delay", delay))
		if err := c.sleep(ctx, delay); err != nil {
			return resp, err
		}
	}
}

// streamOnce sends one request and reads its stream to the end.
func (c *Client) streamOnce(ctx context.Context, oreq openai.ChatCompletionRequest, on func(Delta)) (Response, error) {
	stream, err := c.api.CreateChatCompletionStream(ctx, oreq)
	if err != nil {
		return Response{}, err
	}
	defer stream.Close()
	var asm assembler
	chunks := 0
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return asm.response(), asm.endError(chunks)
		}
		if err != nil {
			return asm.response(), err
		}
		chunks++
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			d := Delta{Text: ch.Delta.Content + ch.Delta.Refusal, Reasoning: ch.Delta.ReasoningContent}
			if d.Text != "" || d.Reasoning != "" {
				on(d)
			}
			asm.add(ch)
		}
		if asm.finish == finishInsufficientResources {
			return asm.response(), &Error{Kind: ErrServer, Detail: "the provider ran out of inference resources"}
		}
	}
}

// finishInsufficientResources is DeepSeek's finish reason for a response cut
// short by its own capacity.
const finishInsufficientResources = "insufficient_system_resource"

// classify turns any error from a request into a scrubbed *Error.
func (c *Client) classify(err error) *Error {
	var e *Error
	var apiErr *openai.APIError
	var marshalErr *json.MarshalerError
	var unsupported *json.UnsupportedTypeError
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &e):
		// From statusDoer or the stream end.
	case errors.As(err, &marshalErr), errors.As(err, &unsupported),
		errors.Is(err, openai.ErrChatCompletionInvalidModel):
		e = &Error{Kind: ErrRequest, Detail: err.Error()}
	case errors.As(err, &apiErr):
		// An error event inside a 200 stream.
		e = &Error{Kind: ErrServer, Detail: clip(apiErr.Message)}
	case errors.As(err, &syntaxErr), errors.As(err, &typeErr):
		e = &Error{Kind: ErrMalformed, Detail: "invalid JSON in the event stream: " + err.Error()}
	case errors.Is(err, openai.ErrTooManyEmptyStreamMessages):
		e = &Error{Kind: ErrMalformed, Detail: "the event stream carried no data"}
	default:
		e = &Error{Kind: ErrConnection, Detail: clip(err.Error())}
	}
	return c.secret.error(e)
}

func (c *Client) chatRequest(req Request) openai.ChatCompletionRequest {
	out := openai.ChatCompletionRequest{
		Model:     c.model,
		Stream:    true,
		MaxTokens: c.maxTokens,
		Messages:  make([]openai.ChatCompletionMessage, 0, len(req.Messages)),
	}
	for _, m := range req.Messages {
		om := openai.ChatCompletionMessage{
			Role:             string(m.Role),
			Content:          m.Content,
			ReasoningContent: m.Reasoning,
			ToolCallID:       m.ToolCallID,
		}
		for _, tc := range m.ToolCalls {
			om.ToolCalls = append(om.ToolCalls, openai.ToolCall{
				ID:       tc.ID,
				Type:     openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: tc.Name, Arguments: tc.Args},
			})
		}
		out.Messages = append(out.Messages, om)
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out.Tools = append(out.Tools, openai.Tool{
			Type: openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{
				Name:        t.Name,
				Description: t.Description,
				Parameters:  params,
			},
		})
	}
	return out
}

func exponentialBackoff(attempt int) time.Duration {
	const limit = 30 * time.Second
	d := time.Second
	for i := 1; i < attempt && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
