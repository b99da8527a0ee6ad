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
// Stream and ListModels return (other than the context's) is an *Error that
// unwraps to one of them; errors.Is(err, ErrPermanent) tells the failures a
// retry of the same request cannot fix.
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
	// ErrConnection: the connection failed or the stream ended early (after
	// the retries when a retry could help; at once for a refused connection,
	// an unknown host or a TLS failure).
	ErrConnection = errors.New("the connection to the model provider failed")
	// ErrMalformed: the provider's stream was not valid server-sent events
	// of chat completion chunks.
	ErrMalformed = errors.New("the model provider sent a malformed response")
	// ErrRequest: the provider refused the request itself (another 4xx: an
	// unknown model, an invalid message).
	ErrRequest = errors.New("the model provider refused the request")
	// ErrContextTooLong: the request does not fit the model's context
	// window (the provider's "maximum context length" answer, or HTTP 413).
	// Error.ContextWindow holds the window when the provider named it. An
	// error of this kind also matches ErrRequest.
	ErrContextTooLong = errors.New("the conversation is longer than the model's context window")
	// ErrEndpoint: the server answered, but not as an OpenAI-compatible API
	// (HTTP 404 or 405 for the endpoint, 501, an unfollowed redirect).
	ErrEndpoint = errors.New("the base URL does not point at an OpenAI-compatible API")
	// ErrBaseURL: the configured base URL is unusable (no scheme, an
	// unknown scheme, no host). Nothing was sent.
	ErrBaseURL = errors.New("the model provider's base URL is invalid")

	// ErrPermanent is no kind of its own: errors.Is(err, ErrPermanent)
	// reports that sending the same request again cannot succeed, so the
	// client did not retry it (see Error.Retryable).
	ErrPermanent = errors.New("the model request cannot succeed when retried")
)

// Error is a classified provider error. Its text is safe to show and log: it
// never contains the API key.
type Error struct {
	// Kind is one of the sentinel errors above (never ErrPermanent).
	Kind error
	// Status is the HTTP status, 0 when there was none.
	Status int
	// Detail is the provider's message or the cause in words, scrubbed of
	// the key.
	Detail string
	// URL is the request, method and address ("POST
	// https://api.deepseek.com/chat/completions"), credentials redacted;
	// empty when nothing was sent.
	URL string
	// Attempts is how many times the request was sent.
	Attempts int
	// Model is the model a chat request asked for ("" for other requests).
	Model string
	// RetryAfter is the delay the provider asked for (429, 503), 0 if none.
	RetryAfter time.Duration
	// ContextWindow is the window, in tokens, a context-too-long answer
	// named; 0 when unknown.
	ContextWindow int
	// RequestedTokens is the request size, in tokens, a context-too-long
	// answer named; 0 when unknown.
	RequestedTokens int

	param string // the parameter a refusal named (OpenAI's error.param)
	final bool   // a retry cannot help, whatever the kind
	idle  bool   // the provider went silent (the idle timeout fired)
	brief string // the cause in a few words, for retry notices
}

// Error renders "<kind>[ (HTTP n)][: detail][ (URL[, after n attempts])]".
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
	switch {
	case e.URL != "" && e.Attempts > 1:
		fmt.Fprintf(&b, " (%s, after %d attempts)", e.URL, e.Attempts)
	case e.URL != "":
		fmt.Fprintf(&b, " (%s)", e.URL)
	}
	return b.String()
}

// Unwrap returns Kind, so errors.Is(err, ErrAuth) works.
func (e *Error) Unwrap() error { return e.Kind }

// Is makes ErrPermanent match an error that cannot succeed on retry, and
// ErrRequest match ErrContextTooLong.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrPermanent:
		return !e.Retryable()
	case ErrRequest:
		return e.Kind == ErrContextTooLong
	}
	return false
}

// Retryable reports whether sending the same request again may succeed: a
// rate limit, a transient server error (500, 502, 503, 504, 408) or a
// dropped, reset or silent connection. Refused connections, unknown hosts,
// TLS failures, 501 and every other 4xx are not.
func (e *Error) Retryable() bool {
	if e.final {
		return false
	}
	switch e.Kind {
	case ErrRateLimited, ErrServer, ErrConnection:
		return true
	}
	return false
}

// cause is the failure in a few words ("HTTP 503", "connection reset").
func (e *Error) cause() string {
	switch {
	case e.Status != 0:
		return fmt.Sprintf("HTTP %d", e.Status)
	case e.brief != "":
		return e.brief
	}
	return e.Kind.Error()
}

// maxDetail caps the provider text kept in an error.
const maxDetail = 300

// statusError builds the Error for a failed HTTP response. sent is the URL
// the request was sent to; resp.Request may differ after redirects.
func statusError(resp *http.Response, sent string, body []byte, now time.Time) *Error {
	pb := parseProviderBody(body)
	e := &Error{
		Status:     resp.StatusCode,
		Detail:     pb.message,
		RetryAfter: retryAfter(resp.Header, now),
	}
	if e.Detail == "" {
		e.Detail = http.StatusText(resp.StatusCode)
	}
	e.Kind, e.final = kindOfStatus(resp.StatusCode, pb)
	e.param = pb.param
	if e.Kind == ErrContextTooLong {
		e.ContextWindow, e.RequestedTokens = parseContextLimit(pb.message)
		e.ContextWindow = cmp0(e.ContextWindow, pb.window)
		e.RequestedTokens = cmp0(e.RequestedTokens, pb.requested)
	}
	if resp.Request != nil && resp.Request.URL != nil {
		if final := resp.Request.URL.Redacted(); final != sent && sent != "" {
			e.Detail += "; the request was redirected to " + final
		}
	}
	return e
}

// cmp0 is a unless it is 0, then b.
func cmp0(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// kindOfStatus classifies an HTTP status; final marks the 5xx a retry
// cannot fix.
func kindOfStatus(code int, pb providerBody) (kind error, final bool) {
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return ErrAuth, true
	case code == http.StatusPaymentRequired:
		return ErrBalance, true
	case code == http.StatusTooManyRequests:
		return ErrRateLimited, false
	case code == http.StatusRequestTimeout:
		return ErrServer, false
	case code == http.StatusRequestEntityTooLarge,
		code >= 400 && isContextTooLong(pb.message, pb.code, pb.typ):
		return ErrContextTooLong, true
	case code == http.StatusNotFound && pb.aboutModel():
		return ErrRequest, true
	case code == http.StatusNotFound, code == http.StatusMethodNotAllowed,
		code == http.StatusNotImplemented, code < 400:
		return ErrEndpoint, true
	case code == http.StatusHTTPVersionNotSupported:
		return ErrServer, true
	case code >= 500:
		return ErrServer, false
	default:
		return ErrRequest, true
	}
}

// providerBody is what an error body says.
type providerBody struct {
	message, code, typ, param string
	// window and requested are llama.cpp's n_ctx and n_prompt_tokens.
	window, requested int
}

// aboutModel reports whether a 404 names the model rather than the path:
// OpenAI's model_not_found, "The model `x` does not exist", Ollama's
// "model \"x\" not found".
func (pb providerBody) aboutModel() bool {
	if pb.code == "model_not_found" {
		return true
	}
	m := strings.ToLower(pb.message)
	return strings.Contains(m, "model") && (strings.Contains(m, "exist") || strings.Contains(m, "not found"))
}

// parseProviderBody reads an OpenAI-style error body ({"error":{"message":
// …, "code": …, "type": …}}), a bare {"message": …} or {"detail": …}, or else
// keeps the start of the raw body as the message.
func parseProviderBody(body []byte) providerBody {
	type inner struct {
		Message any    `json:"message"`
		Code    any    `json:"code"`
		Type    string `json:"type"`
		Param   any    `json:"param"`
		NCtx    int    `json:"n_ctx"`
		NPrompt int    `json:"n_prompt_tokens"`
	}
	var env struct {
		Error  json.RawMessage `json:"error"`
		Detail any             `json:"detail"`
		inner
	}
	raw := providerBody{message: clip(strings.TrimSpace(string(body)))}
	if json.Unmarshal(body, &env) != nil {
		return raw
	}
	in := env.inner
	var nested inner
	structured := len(env.Error) > 0 && json.Unmarshal(env.Error, &nested) == nil
	if structured {
		in = nested
	} else if msg := text(env.Error); msg != "" { // {"error": "text"}
		in.Message = msg
	}
	pb := providerBody{message: clip(text(in.Message)), code: text(in.Code), typ: in.Type, param: text(in.Param),
		window: in.NCtx, requested: in.NPrompt}
	if pb.message == "" {
		pb.message = clip(text(env.Detail))
	}
	if pb.message == "" && !structured { // an error object without a message says nothing more
		pb.message = raw.message
	}
	return pb
}

// text renders a JSON value that should be a string (a code may be a
// number, a message a list of strings).
func text(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case []any:
		parts := make([]string, 0, len(v))
		for _, p := range v {
			parts = append(parts, text(p))
		}
		return strings.Join(parts, ", ")
	case json.RawMessage:
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
		return ""
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
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

// error returns e with its texts scrubbed.
func (s scrubber) error(e *Error) *Error {
	e.Detail = s.scrub(e.Detail)
	e.URL = s.scrub(e.URL)
	return e
}

// DeepSeek's pages the advice points to, when the provider is DeepSeek.
const (
	deepseekKeys  = "https://platform.deepseek.com/api_keys"
	deepseekTopUp = "https://platform.deepseek.com/top_up"
)

// Advice is a plain sentence about err for the user: what went wrong and,
// where it helps, the fix. It tells apart DeepSeek's statuses (401 wrong
// key, 402 no balance, 404 an unknown model or a wrong base URL, 422 an
// invalid parameter) and its thinking-mode refusals, pointing at
// DeepSeek's pages when the request went to DeepSeek. It is "" when err is
// not an *Error. The provider's own words are not repeated: they are in
// err's text.
func Advice(err error) string {
	var e *Error
	if !errors.As(err, &e) {
		return ""
	}
	deepseek := strings.Contains(e.URL, "api.deepseek.com")
	switch {
	case e.Kind == ErrThinkingRefused:
		model := "this model"
		if e.Model != "" {
			model = fmt.Sprintf("the model %q", e.Model)
		}
		return "The model provider does not take the thinking setting for " + model + ", so it is no longer sent: the provider's default applies."
	case e.Kind == ErrAuth && e.Status == http.StatusForbidden:
		return "The model provider refused this API key access (HTTP 403). Check that the key is allowed to use the model, or use another key: set DSH_API_KEY (or DEEPSEEK_API_KEY), or run `dsh-acp login`."
	case e.Kind == ErrAuth:
		s := "The model provider did not accept the API key (HTTP 401: it is wrong, revoked or missing). Set DSH_API_KEY (or DEEPSEEK_API_KEY) to a valid key, or run `dsh-acp login` to store one."
		if deepseek {
			s += " DeepSeek's keys are made at " + deepseekKeys + "."
		}
		return s
	case e.Kind == ErrBalance:
		s := "The model provider's account has run out of balance (HTTP 402). Top it up, then send the prompt again."
		if deepseek {
			s = "The DeepSeek account has run out of balance (HTTP 402). Top it up at " + deepseekTopUp + ", then send the prompt again."
		}
		return s
	case e.Kind == ErrRequest && unknownModel(e):
		model := "the model"
		if e.Model != "" {
			model = fmt.Sprintf("the model %q", e.Model)
		}
		return fmt.Sprintf("The model provider does not serve %s (HTTP %d). Choose", model, e.Status) + " another with /model (or the model selector), or start dsh-acp with --model or DSH_MODEL set to one the provider lists."
	case e.Kind == ErrEndpoint && e.Status == http.StatusNotFound:
		return fmt.Sprintf("Nothing answers at %s (HTTP 404): the base URL does not point at an OpenAI-compatible API. Check --base-url / DSH_BASE_URL (DeepSeek's is %s).", e.URL, DefaultBaseURL)
	case e.Kind == ErrRequest && e.Status == http.StatusUnprocessableEntity:
		return "The model provider refused a parameter of the request (HTTP 422: invalid parameters). If the model was just changed, it may not take the session's settings: choose another model with /model, or set thinking back to the provider's default."
	case e.Kind == ErrRequest && strings.Contains(e.Detail, "reasoning_content"):
		return "The provider refused the conversation: in thinking mode every earlier tool call must come back with its reasoning, and one did not (a fault of dsh-acp; please report it). Start a new session, or turn thinking off, to go on."
	case e.Kind == ErrRequest && strings.Contains(strings.ToLower(e.Detail), "tool_choice"):
		return "The provider refused the request's tool_choice in thinking mode (a fault of dsh-acp; please report it). Turn thinking off to go on."
	}
	return ""
}

// unknownModel reports whether e is the provider saying the model does not
// exist: DeepSeek's HTTP 400 "Model Not Exist", OpenAI's 404
// model_not_found, another 404 naming the model.
func unknownModel(e *Error) bool {
	d := strings.ToLower(e.Detail)
	if strings.Contains(d, "model not exist") || strings.Contains(d, "model_not_found") {
		return true
	}
	return e.Status == http.StatusNotFound && strings.Contains(d, "model")
}
