// Package llm is the model client: streaming chat completions with tool calls
// against an OpenAI-compatible API (DeepSeek by default), plus the provider's
// model list (and CheckModel, which judges a model by it) and a table of
// context windows.
//
// The request body is encoded here (encode.go), not by go-openai, whose
// omitempty drops an empty reasoning_content; go-openai reads the event
// stream. The body keeps DeepSeek's thinking-mode rules in every request:
// each assistant message with tool calls carries reasoning_content, verbatim
// (an empty string when the model gave none), and tool_choice is never
// sent. A Thinking setting (off, low, high, max; "" leaves the provider's
// default) becomes thinking.type and reasoning_effort.
//
// It classifies provider failures into a few sentinel errors (see Error;
// Advice words them for the user), keeps the API key out of every error it
// returns, and retries only what a retry can fix: a rate limit, a transient
// server error, a dropped, reset or silent connection — and only before any
// output has streamed. A refused connection, an unknown host, a bad base
// URL, 501 and the other 4xx fail at once. Each retry can be announced to
// the caller (Request.OnRetry).
//
// Every request asks for token usage in the stream
// (stream_options.include_usage); Response.Usage carries it, flagged unknown
// when the provider sends none.
//
// Known limits: only the first choice (index 0) of a response is read;
// usage from a provider that ignores include_usage is unknown, not
// estimated; a provider that rejects stream_options with a 400 naming it is
// asked again without (once per Client), and one that rejects the thinking
// parameters (a 400 or 422 naming thinking or reasoning_effort) is asked
// again without them and never sent them again for that model (once per
// Client and model; Response.ThinkingRefused reports it); which refusals
// name a parameter is judged from the provider's words and error.param;
// the context-too-long recognition
// knows the wordings of OpenAI, DeepSeek, vLLM, Mistral, llama.cpp,
// Anthropic-style and Gemini's OpenAI layer, and another provider's answer
// is an ErrRequest; ContextWindow knows only DeepSeek's models; the
// reasoning of an assistant message without tool calls is sent only when
// the caller keeps it (DeepSeek ignores it there).
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.uber.org/zap"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultBaseURL      = "https://api.deepseek.com"
	DefaultModel        = "deepseek-flash"
	DefaultMaxRetries   = 3
	DefaultMaxRetryWait = time.Minute
	// DefaultIdleTimeout is how long a silent provider is waited for.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultModelsTimeout bounds ListModels.
	DefaultModelsTimeout = 10 * time.Second
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
	// ModelsTimeout bounds a ListModels request. 0 means
	// DefaultModelsTimeout.
	ModelsTimeout time.Duration
	// Thinking is the thinking setting of requests that name none
	// (Request.Thinking); ThinkingDefault sends no thinking parameter.
	Thinking Thinking
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
	idle         time.Duration // 0: unbounded

	err       error  // the configuration's fault, returned by every call
	chatURL   string // "POST <base>/chat/completions", redacted, for errors
	modelsURL string // "GET <base>/models"

	// noStreamOptions is set once the provider refused stream_options.
	noStreamOptions atomic.Bool
	// thinking is the default thinking setting (Config.Thinking).
	thinking Thinking
	// thinkingRefused holds the models (string → true) for which the
	// provider refused the thinking parameters.
	thinkingRefused sync.Map

	modelsTimeout time.Duration
	modelsLock    chan struct{} // a one-slot semaphore guarding models
	models        []Model       // nil until a ListModels succeeded
}

// New returns a Client for cfg. A base URL that cannot work (see
// ValidateBaseURL) does not stop New: the client's Err reports it and every
// call returns it at once, before anything is sent.
func New(cfg Config) *Client {
	c := &Client{
		model:         cfg.Model,
		maxTokens:     cfg.MaxTokens,
		maxRetries:    cfg.MaxRetries,
		backoff:       cfg.Backoff,
		maxRetryWait:  cfg.MaxRetryWait,
		sleep:         cfg.Sleep,
		log:           cfg.Logger,
		secret:        scrubber(cfg.APIKey),
		modelsTimeout: cfg.ModelsTimeout,
		modelsLock:    make(chan struct{}, 1),
		thinking:      cfg.Thinking,
	}
	if c.modelsTimeout <= 0 {
		c.modelsTimeout = DefaultModelsTimeout
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
	if err := ValidateBaseURL(oc.BaseURL); err != nil {
		c.err = c.secret.error(err.(*Error))
	}
	c.chatURL = c.secret.scrub("POST " + endpoint(oc.BaseURL, "/chat/completions"))
	c.modelsURL = c.secret.scrub("GET " + endpoint(oc.BaseURL, "/models"))
	c.idle = cfg.IdleTimeout
	if c.idle == 0 {
		c.idle = DefaultIdleTimeout
	}
	c.idle = max(c.idle, 0)
	oc.HTTPClient = statusDoer{client: hc, now: time.Now, idle: c.idle}
	oc.EmptyMessagesLimit = emptyMessagesLimit
	c.api = openai.NewClientWithConfig(oc)
	return c
}

// endpoint is base + path as go-openai builds it, with credentials redacted.
func endpoint(base, path string) string {
	full := strings.TrimRight(base, "/") + path
	if u, err := url.Parse(full); err == nil {
		return u.Redacted()
	}
	return full
}

// Model is the model the client asks for.
func (c *Client) Model() string { return c.model }

// Err is the configuration error every call returns (an *Error of kind
// ErrBaseURL), nil when the client can send requests.
func (c *Client) Err() error { return c.err }

// IdleWorstCase is the longest Stream waits on a provider that sends
// nothing at all before it gives up: the idle timeout for each of the
// MaxRetries+1 attempts plus the backoff between them. It is 0 when the
// idle timeout is unbounded. The error Stream returns when the idle timeout
// ends it states this figure.
func (c *Client) IdleWorstCase() time.Duration {
	if c.idle == 0 {
		return 0
	}
	return c.idle*time.Duration(c.maxRetries+1) + c.backoffTotal()
}

// backoffTotal is the sum of the delays between all attempts.
func (c *Client) backoffTotal() time.Duration {
	var total time.Duration
	for i := 1; i <= c.maxRetries; i++ {
		total += min(c.backoff(i), c.maxRetryWait)
	}
	return total
}

// Stream sends req and streams the response: onDelta (may be nil) receives
// text and reasoning pieces as they arrive, on the caller's goroutine.
//
// Stream always returns what was assembled so far, also with an error. The
// error is ctx.Err() when ctx ended, otherwise an *Error (see the sentinel
// errors). A retryable failure (Error.Retryable: 429, 408, 500, 502, 503,
// 504, a dropped, reset or silent connection) is retried up to MaxRetries
// times, but only while nothing has reached onDelta; req.OnRetry hears of
// each retry before its wait. Any other failure returns at once.
func (c *Client) Stream(ctx context.Context, req Request, onDelta func(Delta)) (Response, error) {
	if c.err != nil {
		return Response{}, c.err
	}
	body := c.chatBody(req)
	raw, err := body.encode()
	if err != nil {
		return Response{}, c.secret.error(&Error{Kind: ErrRequest, Detail: err.Error(), URL: c.chatURL, final: true})
	}
	emitted := false
	on := func(d Delta) {
		emitted = true
		if onDelta != nil {
			onDelta(d)
		}
	}
	var refused *Error // the provider's refusal of the thinking parameters
	attempts := c.maxRetries + 1
	for attempt := 1; ; attempt++ {
		start := time.Now()
		resp, err := c.streamOnce(ctx, body.model, raw, on)
		resp.ThinkingRefused = refused
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return resp, ctx.Err()
		}
		e := c.classify(err, c.chatURL)
		e.Model = body.model
		if !emitted {
			// The provider's quirks, not failures: ask again without.
			if c.refusedStreamOptions(&body, e) {
				raw, _ = body.encode()
				attempt--
				continue
			}
			if r := c.refusedThinking(&body, e); r != nil {
				refused = r
				raw, _ = body.encode()
				attempt--
				continue
			}
		}
		e.Attempts = attempt
		if emitted || attempt >= attempts || !e.Retryable() {
			if e.idle {
				e.Detail += c.idleNote(emitted)
			}
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
			zap.Int("status", e.Status), zap.String("cause", e.cause()), zap.Duration("delay", delay))
		if req.OnRetry != nil {
			req.OnRetry(RetryInfo{Attempt: attempt, Attempts: attempts, Delay: delay, Cause: e.cause(), Err: e})
		}
		if err := c.sleep(ctx, delay); err != nil {
			return resp, err
		}
	}
}

// idleNote states, for an error the idle timeout caused, why it ended there.
func (c *Client) idleNote(emitted bool) string {
	if emitted {
		return "; the answer had begun, so it was not retried"
	}
	return fmt.Sprintf("; a silent provider is given up on after at most %s (%d attempts × %s, plus %s between them)",
		roundDelay(c.IdleWorstCase()), c.maxRetries+1, c.idle, roundDelay(c.backoffTotal()))
}

// refusedStreamOptions reports whether e is the provider refusing the
// stream_options field; if so it drops the field from body and from every
// later request of the client.
func (c *Client) refusedStreamOptions(body *chatBody, e *Error) bool {
	if !body.usage || e.Status != http.StatusBadRequest || e.Kind != ErrRequest {
		return false
	}
	detail := strings.ToLower(e.Detail)
	if !strings.Contains(detail, "stream_options") && !strings.Contains(detail, "include_usage") {
		return false
	}
	c.noStreamOptions.Store(true)
	body.usage = false
	c.log.Info("the model provider refused stream_options; usage will be unknown")
	return true
}

// streamOnce sends one request and reads its stream to the end.
// The body sent is raw: go-openai encodes only a stub naming the model, which
// statusDoer replaces (see swapBody).
func (c *Client) streamOnce(ctx context.Context, model string, raw []byte, on func(Delta)) (Response, error) {
	stream, err := c.api.CreateChatCompletionStream(withChatBody(ctx, raw), openai.ChatCompletionRequest{Model: model})
	if err != nil {
		return Response{}, err
	}
	defer stream.Close()
	var asm assembler
	chunks := 0
	for {
		raw, err := stream.RecvRaw()
		if errors.Is(err, io.EOF) {
			return asm.response(), asm.endError(chunks)
		}
		if err != nil {
			return asm.response(), err
		}
		var chunk streamChunk
		if err := json.Unmarshal(raw, &chunk); err != nil {
			return asm.response(), err
		}
		chunks++
		asm.addUsage(chunk.Usage)
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

// classify turns any error from a request to url into a scrubbed *Error.
func (c *Client) classify(err error, url string) *Error {
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
		e = streamErrorEvent(apiErr)
	case errors.As(err, &syntaxErr), errors.As(err, &typeErr):
		e = &Error{Kind: ErrMalformed, Detail: "invalid JSON in the event stream: " + err.Error()}
	case errors.Is(err, openai.ErrTooManyEmptyStreamMessages):
		e = &Error{Kind: ErrMalformed, Detail: "the event stream carried no data"}
	default:
		e = transportError(err)
	}
	if e.URL == "" {
		e.URL = url
	}
	return c.secret.error(e)
}

// streamErrorEvent classifies an error event inside a 200 stream: a
// context-too-long answer, or else a server error.
func streamErrorEvent(apiErr *openai.APIError) *Error {
	msg := clip(apiErr.Message)
	if !isContextTooLong(msg, text(apiErr.Code), apiErr.Type) {
		return &Error{Kind: ErrServer, Detail: msg}
	}
	window, requested := parseContextLimit(msg)
	return &Error{Kind: ErrContextTooLong, Detail: msg, ContextWindow: window, RequestedTokens: requested, final: true}
}

// chatBody is what req asks for, with the client's settings: its model,
// max_tokens, usage unless the provider refused stream_options, and the
// thinking setting unless the provider refused it for that model.
func (c *Client) chatBody(req Request) chatBody {
	body := chatBody{
		model:     c.model,
		maxTokens: c.maxTokens,
		usage:     !c.noStreamOptions.Load(),
		thinking:  c.thinking,
		messages:  req.Messages,
		tools:     req.Tools,
	}
	if req.Model != "" {
		body.model = req.Model
	}
	if req.Thinking != ThinkingDefault {
		body.thinking = req.Thinking
	}
	if c.ThinkingRefused(body.model) {
		body.thinking = ThinkingDefault
	}
	return body
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
