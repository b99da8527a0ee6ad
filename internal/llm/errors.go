package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Sentinel errors classify what went wrong with the provider. Every error
// Stream returns (other than the context's) is an *Error that unwraps to one
// of them.
var (
	// ErrAuth: the provider rejected the API key (HTTP 401 or 403).
	ErrAuth = errors.New("the model provider rejected the API key")
	// ErrBalance: the account has no balance left (HTTP 402).
	ErrBalance = errors.New("the model provider account has insufficient balance")
	// ErrRateLimited: too many requests (HTTP 429), after the retries.
	ErrRateLimited = errors.New("the model provider is rate limiting requests")
	// ErrServer: the provider failed (HTTP 5xx or an error event in the
	// stream), after the retries.
	ErrServer = errors.New("the model provider had a server error")
	// ErrConnection: the connection failed or the stream ended early, after
	// the retries.
	ErrConnection = errors.New("the connection to the model provider failed")
	// ErrMalformed: the provider's stream was not valid server-sent events
	// of chat completion chunks.
	ErrMalformed = errors.New("the model provider sent a malformed response")
	// ErrRequest: the provider refused the request itself (another 4xx: an
	// unknown model, a context too long, an invalid message).
	ErrRequest = errors.New("the model provider refused the request")
)

// Error is a classified provider error. Its text is safe to show and log: it
// never contains the API key.
type Error struct {
	// Kind is one of the sentinel errors above.
	Kind error
	// Status is the HTTP status, 0 when there was none.
	Status int
	// Detail is the provider's message or the cause, scrubbed of the key.
	Detail string
	// RetryAfter is the delay the provider asked for (429, 503), 0 if none.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Kind.Error())
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.Status)
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Unwrap returns Kind, so errors.Is(err, ErrAuth) works.
func (e *Error) Unwrap() error { return e.Kind }

// retryable reports whether a request that failed this way may be sent again.
func (e *Error) retryable() bool {
	switch e.Kind {
	case ErrRateLimited, ErrServer, ErrConnection:
		return true
	}
	return false
}

// maxDetail caps the provider text kept in an error.
const maxDetail = 300

// statusError builds the Error for a failed HTTP response.
func statusError(resp *http.Response, body []byte, now time.Time) *Error {
	return &Error{
		Kind:       kindOfStatus(resp.StatusCode),
		Status:     resp.StatusCode,
		Detail:     providerMessage(body),
		RetryAfter: retryAfter(resp.Header, now),
	}
}

func kindOfStatus(code int) error {
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return ErrAuth
	case code == http.StatusPaymentRequired:
		return ErrBalance
	case code == http.StatusTooManyRequests:
		return ErrRateLimited
	case code >= 500:
		return ErrServer
	default:
		return ErrRequest
	}
}

// providerMessage extracts the message of an OpenAI-style error body
// ({"error":{"message":…}}), or else the start of the raw body.
func providerMessage(body []byte) string {
	var env struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &env) == nil && env.Error != nil && env.Error.Message != "" {
		return clip(env.Error.Message)
	}
	return clip(strings.TrimSpace(string(body)))
}

func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= maxDetail {
		return s
	}
	cut := maxDetail
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// retryAfter reads Retry-After (seconds or an HTTP date) or the
// retry-after-ms extension; 0 when absent or unreadable.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// scrubber removes a secret from text.
type scrubber string

func (s scrubber) scrub(text string) string {
	if len(s) < 4 { // too short to be a real key; replacing would mangle text
		return text
	}
	return strings.ReplaceAll(text, string(s), "[redacted]")
}

// error returns e with its detail scrubbed.
func (s scrubber) error(e *Error) *Error {
	e.Detail = s.scrub(e.Detail)
	return e
}
