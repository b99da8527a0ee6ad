package agent

import (
	"errors"

	"github.com/dsh-acp/dsh-acp/internal/llm"
)

// noModelText tells the user how to configure a model.
const noModelText = "No model is configured. Run `dsh-acp login`, or set DSH_API_KEY (or DEEPSEEK_API_KEY) to your API key; " +
	"optionally choose the endpoint with --base-url or DSH_BASE_URL and the model with --model or DSH_MODEL. " +
	"Commands typed with a leading ! still run without a model."

// describeModelError is the user's message for a failed model request: what
// to do about it, then the provider's details (which never hold the key).
func describeModelError(err error) string {
	var advice string
	switch {
	case errors.Is(err, llm.ErrBaseURL):
		advice = "The model provider's base URL is not usable. Fix --base-url / DSH_BASE_URL."
	case errors.Is(err, llm.ErrEndpoint):
		advice = "The base URL does not point at an OpenAI-compatible API. Check --base-url / DSH_BASE_URL."
	case errors.Is(err, llm.ErrContextTooLong):
		advice = "The conversation no longer fits the model's context window. Run /compact, start a new session, or pick a model with a larger window (/model)."
	case errors.Is(err, llm.ErrAuth):
		advice = "The model provider rejected the API key. Check DSH_API_KEY (or DEEPSEEK_API_KEY). If you logged in, run `dsh-acp login` again."
	case errors.Is(err, llm.ErrBalance):
		advice = "The model provider account has insufficient balance. Top it up, then try again."
	case errors.Is(err, llm.ErrRateLimited):
		advice = "The model provider is rate limiting requests. Wait a moment, then try again."
	case errors.Is(err, llm.ErrServer):
		advice = "The model provider had a server error. Try again shortly."
	case errors.Is(err, llm.ErrConnection):
		advice = "The connection to the model provider failed. Check the network and --base-url / DSH_BASE_URL, then try again."
	case errors.Is(err, llm.ErrMalformed):
		advice = "The model provider sent a response that could not be read. Check that --base-url / DSH_BASE_URL points at an OpenAI-compatible API."
	case errors.Is(err, llm.ErrRequest):
		advice = "The model provider refused the request. Check --model / DSH_MODEL; a very long conversation may also exceed the model's context."
	default:
		advice = "The model request failed."
	}
	if a := llm.Advice(err); a != "" { // the provider's own case, in plain words
		advice = a
	}
	return advice + "\n\nDetails: " + err.Error()
}

// stuckText is the user's message when a request still does not fit after
// compaction (compacted) or when nothing could be compacted: what the next
// prompt will do, and what else the user can do.
func stuckText(err error, compacted bool) string {
	advice := "The conversation does not fit the model's context window, and nothing more could be compacted: " +
		"the newest turn alone is too long. Send a shorter prompt (or attach less): older turns are then summarized " +
		"to make room. You can also start a new session, or pick a model with a larger window (/model)."
	if compacted {
		advice = "The conversation still does not fit the model's context window after compacting it. " +
			"Your next prompt compacts it further (older turns are summarized, or dropped when a summary cannot be made); " +
			"you can also run /compact now, start a new session, or pick a model with a larger window (/model)."
	}
	return advice + "\n\nDetails: " + err.Error()
}
