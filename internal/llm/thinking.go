package llm

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// Thinking is how much the model thinks before it answers: DeepSeek's
// thinking mode, sent as the request parameters
//
//	off           "thinking": {"type": "disabled"}
//	low/high/max  "thinking": {"type": "enabled"}, "reasoning_effort": "<level>"
//
// The zero value, ThinkingDefault, sends neither parameter: the provider
// decides (DeepSeek: thinking on, effort high).
type Thinking string

const (
	// ThinkingDefault sends no thinking parameter: the provider's default.
	ThinkingDefault Thinking = ""
	// ThinkingOff turns thinking off (faster, cheaper, no reasoning).
	ThinkingOff Thinking = "off"
	// ThinkingLow thinks briefly.
	ThinkingLow Thinking = "low"
	// ThinkingHigh is DeepSeek's default effort, asked for explicitly.
	ThinkingHigh Thinking = "high"
	// ThinkingMax thinks the most (DeepSeek recommends it for agents).
	ThinkingMax Thinking = "max"
)

// ThinkingLevels are the settings a user may choose, in order; the
// provider's default (ThinkingDefault) comes first.
func ThinkingLevels() []Thinking {
	return []Thinking{ThinkingDefault, ThinkingOff, ThinkingLow, ThinkingHigh, ThinkingMax}
}

// ParseThinking reads a setting as a user types it (--thinking, DSH_THINKING,
// /thinking, the session option): "", "default" or "auto" for the
// provider's default, "off" (also "none", "disabled"), "low", "high", "max",
// case and surrounding spaces ignored. Anything else is an error naming the
// accepted values.
func ParseThinking(s string) (Thinking, error) {
	switch v := strings.ToLower(strings.TrimSpace(s)); v {
	case "", "default", "auto":
		return ThinkingDefault, nil
	case "off", "none", "disabled":
		return ThinkingOff, nil
	case "low", "high", "max":
		return Thinking(v), nil
	}
	return ThinkingDefault, fmt.Errorf("unknown thinking setting %q (choose default, off, low, high or max)", s)
}

// String is the setting's value as ParseThinking reads it ("default" for
// ThinkingDefault).
func (t Thinking) String() string {
	if t == ThinkingDefault {
		return "default"
	}
	return string(t)
}

// Label is the setting's name for a menu: "Provider default", "Off",
// "Low", "High", "Max".
func (t Thinking) Label() string {
	switch t {
	case ThinkingDefault:
		return "Provider default"
	case ThinkingOff:
		return "Off"
	case ThinkingLow:
		return "Low"
	case ThinkingHigh:
		return "High"
	case ThinkingMax:
		return "Max"
	}
	return string(t)
}

// Enabled reports whether the setting asks for thinking ("" and off do
// not).
func (t Thinking) Enabled() bool { return t == ThinkingLow || t == ThinkingHigh || t == ThinkingMax }

// ErrThinkingRefused: the provider refused the thinking parameters (an HTTP
// 400 or 422 naming thinking or reasoning_effort). Stream never returns it
// as its error: it asks again without them, sends them no more for that
// model, and reports the refusal once, in Response.ThinkingRefused.
var ErrThinkingRefused = errors.New("the model provider does not take the thinking setting")

// thinkingParam matches a refusal that names a thinking parameter: OpenAI's
// "Unrecognized request argument supplied: thinking", "Unsupported
// parameter: 'reasoning_effort'", a strict server's `unknown field
// "thinking"`.
var thinkingParam = regexp.MustCompile(`reasoning_effort|\bthinking\b`)

// refusesThinking reports whether e is the provider refusing the thinking
// parameters, not a rule of thinking mode itself (DeepSeek's "The
// `reasoning_content` in the thinking mode must be passed back",
// "Thinking mode does not support this tool_choice").
func refusesThinking(e *Error) bool {
	if e.Kind != ErrRequest || (e.Status != http.StatusBadRequest && e.Status != http.StatusUnprocessableEntity) {
		return false
	}
	if e.param == "thinking" || e.param == "reasoning_effort" {
		return true
	}
	d := strings.ToLower(e.Detail)
	if strings.Contains(d, "thinking mode") || strings.Contains(d, "reasoning_content") {
		return false
	}
	return thinkingParam.MatchString(d)
}

// refusedThinking reports whether e is the provider refusing the thinking
// parameters body carried; if so it drops them from body and from every
// later request to that model, and returns the refusal as an *Error of
// kind ErrThinkingRefused.
func (c *Client) refusedThinking(body *chatBody, e *Error) *Error {
	if body.thinking == ThinkingDefault || !refusesThinking(e) {
		return nil
	}
	c.thinkingRefused.Store(body.model, true)
	body.thinking = ThinkingDefault
	c.log.Info("the model provider refused the thinking parameters; they are no longer sent for this model")
	r := *e
	r.Kind = ErrThinkingRefused
	return &r
}

// ThinkingRefused reports whether the provider refused the thinking
// parameters for model: the client sends them no more for it, and the
// setting has no effect (a thinking control should not be offered).
func (c *Client) ThinkingRefused(model string) bool {
	if model == "" {
		model = c.model
	}
	_, ok := c.thinkingRefused.Load(model)
	return ok
}
