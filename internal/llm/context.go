package llm

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// ContextWindow is the context window, in tokens, of a model of the default
// provider (DeepSeek), and whether the model is known. The figures are the
// provider's published ones, rounded down where "1M" is all it says, so a
// window from this table is never larger than the real one.
//
// Sources (read 2026-12):
//   - https://api-docs.deepseek.com/quick_start/pricing — deepseek-flash
//     (DeepSeek-V4.1-Flash; "use deepseek-flash as the model name", the
//     legacy deepseek-v4-flash is served by it) and deepseek-v4-pro:
//     context length 1M. Earlier: "the model names deepseek-chat and
//     deepseek-reasoner … correspond to the non-thinking mode and thinking
//     mode of deepseek-v4-flash".
//   - https://api-docs.deepseek.com/news/news260424 — the V4 release: those
//     two legacy names stop being served after 2026-07-24 15:59 UTC. Before
//     V4 they had 128K (V3.1/V3.2) and 64K (V3) windows.
func ContextWindow(model string) (int, bool) {
	switch strings.ToLower(strings.TrimSpace(model)) {
	case "deepseek-flash", "deepseek-v4-flash", "deepseek-v4-pro", "deepseek-chat", "deepseek-reasoner":
		return 1_000_000, true
	}
	return 0, false
}

// contextCodes are the error codes and types that mean "context too long":
// OpenAI's code and llama.cpp's type.
var contextCodes = []string{"context_length_exceeded", "exceed_context_size_error"}

// contextPhrases are wordings of "context too long", lower case: OpenAI,
// DeepSeek and vLLM ("This model's maximum context length is N tokens.
// However, you requested M tokens…" / "…your messages resulted in M
// tokens"), Mistral ("…too large for model with N maximum context length"),
// OpenAI's newer "Your input exceeds the context window of this model",
// llama.cpp, Anthropic-style ("prompt is too long: M tokens > N maximum")
// and Gemini's OpenAI layer ("The input token count (M) exceeds the maximum
// number of tokens allowed (N)").
var contextPhrases = []string{
	"maximum context length",
	"context length exceeded",
	"context_length_exceeded",
	"exceeds the context window",
	"exceeds the available context size",
	"prompt is too long",
	"exceeds the maximum number of tokens",
}

// isContextTooLong reports whether a provider error means the request does
// not fit the model's context window.
func isContextTooLong(message, code, typ string) bool {
	for _, c := range contextCodes {
		if strings.EqualFold(code, c) || strings.EqualFold(typ, c) {
			return true
		}
	}
	lower := strings.ToLower(message)
	for _, p := range contextPhrases {
		if strings.Contains(lower, p) {
			return true
		}
	}
	return false
}

// A count is digits, maybe grouped by commas or underscores ("128,000").
const count = `([0-9][0-9,_]{0,20})`

// contextPatterns are compiled on first use (a context-too-long error),
// not at start-up.
var contextPatterns = sync.OnceValues(func() (window, requested *regexp.Regexp) {
	window = regexp.MustCompile(`(?i)` + strings.Join([]string{
		`maximum context length is ` + count,
		`maximum context length of ` + count,
		count + ` maximum context length`,
		`context window of ` + count,
		`> ?` + count + ` maximum`,
		`maximum number of tokens allowed \(` + count + `\)`,
	}, "|"))
	requested = regexp.MustCompile(`(?i)` + strings.Join([]string{
		`you requested ` + count + ` tokens`,
		`resulted in ` + count + ` tokens`,
		`prompt is too long: ` + count,
		`prompt contains ` + count + ` tokens`,
		`input token count \(` + count + `\)`,
	}, "|"))
	return window, requested
})

// parseContextLimit reads the window and the request size, in tokens, out
// of a context-too-long message; each is 0 when the message does not say.
func parseContextLimit(message string) (window, requested int) {
	windowPattern, requestedPattern := contextPatterns()
	return firstCount(windowPattern, message), firstCount(requestedPattern, message)
}

// firstCount is the first number re captures in s, 0 when none (or when it
// is absurd).
func firstCount(re *regexp.Regexp, s string) int {
	m := re.FindStringSubmatch(s)
	for _, g := range m[min(1, len(m)):] {
		if g == "" {
			continue
		}
		n, err := strconv.Atoi(strings.NewReplacer(",", "", "_", "").Replace(g))
		if err != nil || n <= 0 || n > maxTokens {
			return 0
		}
		return n
	}
	return 0
}

// maxTokens bounds a plausible token count (a billion tokens).
const maxTokens = 1 << 30
