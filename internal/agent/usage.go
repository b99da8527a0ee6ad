package agent

import (
	"sync"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/llm"
)

// DefaultContextWindow is the window, in tokens, of a model neither
// Config.ContextWindow nor llm.ContextWindow knows: small enough for most
// models served today, so compaction starts early rather than never. A
// provider that names a smaller window when it refuses a request is
// believed from then on.
const DefaultContextWindow = 65_536

// Price is what the provider charges, per million tokens.
type Price struct {
	// Input is the price of prompt tokens; CachedInput of prompt tokens
	// served from the provider's cache (0: the same as Input); Output of
	// completion tokens.
	Input, CachedInput, Output float64
	// Currency is an ISO 4217 code such as "USD".
	Currency string
}

// cost is what u cost at p.
func (p *Price) cost(u llm.Usage) float64 {
	if p == nil || !u.Known {
		return 0
	}
	cached := p.CachedInput
	if cached == 0 {
		cached = p.Input
	}
	fresh := max(u.PromptTokens-u.CachedTokens, 0)
	return (float64(fresh)*p.Input + float64(u.CachedTokens)*cached + float64(u.CompletionTokens)*p.Output) / 1e6
}

// The agent's measure of a request's size, in characters: each message's
// text, reasoning, call names and arguments, plus a little for the
// envelope of each; tool definitions likewise. Tokens are estimated from it
// with the latest ratio the provider's counts gave.
const (
	msgOverhead  = 16
	callOverhead = 32
	toolOverhead = 32
)

func msgSize(m llm.Message) int {
	n := len(m.Content) + len(m.Reasoning) + len(m.ToolCallID) + msgOverhead
	for _, c := range m.ToolCalls {
		n += len(c.ID) + len(c.Name) + len(c.Args) + callOverhead
	}
	return n
}

func toolsSize(tools []llm.ToolDef) int {
	n := 0
	for _, t := range tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters) + toolOverhead
	}
	return n
}

// requestSize is req's size in the agent's measure.
func requestSize(req llm.Request) int {
	n := toolsSize(req.Tools)
	for _, m := range req.Messages {
		n += msgSize(m)
	}
	return n
}

// estimator turns the agent's size measure into tokens: tokens/size from a
// calibration, or one token per three characters (more than most
// tokenizers give, so uncalibrated estimates err high).
type estimator struct{ tokens, size int }

func (e estimator) of(size int) int {
	if e.size <= 0 || e.tokens <= 0 {
		return (size + 2) / 3
	}
	return int((int64(size)*int64(e.tokens) + int64(e.size) - 1) / int64(e.size))
}

// ledger is a session's token accounting, folded from its Usage and
// Compaction events (live and on restore alike). Its methods are safe for
// concurrent use: /usage and a reload read it while no turn holds it.
type ledger struct {
	mu       sync.Mutex
	est      estimator
	last     event.Usage
	haveLast bool
	cost     float64
	currency string
	learned  map[string]int // windows providers named when refusing, by model

	requests, prompt, completion, cached, compactions int
}

func (l *ledger) used(u event.Usage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if u.Known && u.Prompt > 0 && u.RequestSize > 0 {
		l.est = estimator{tokens: u.Prompt, size: u.RequestSize}
	}
	l.last, l.haveLast = u, true
	if u.Currency != "" {
		l.cost, l.currency = u.Cost, u.Currency
	}
	if !u.Estimated {
		l.requests++
		l.prompt += u.Prompt
		l.completion += u.Completion
		l.cached += u.Cached
	}
}

func (l *ledger) compacted(c event.Compaction) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.RequestTokens > 0 && c.RequestSize > 0 {
		l.est = estimator{tokens: c.RequestTokens, size: c.RequestSize}
	}
	if c.ProviderWindow > 0 {
		if l.learned == nil {
			l.learned = map[string]int{}
		}
		l.learned[c.Model] = c.ProviderWindow
	}
	if c.Currency != "" {
		l.cost, l.currency = c.Cost, c.Currency
	}
	l.compactions++
}

// reset forgets everything (a restore starts over).
func (l *ledger) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.est, l.last, l.haveLast, l.cost, l.currency, l.learned = estimator{}, event.Usage{}, false, 0, "", nil
	l.requests, l.prompt, l.completion, l.cached, l.compactions = 0, 0, 0, 0, 0
}

func (l *ledger) estimator() estimator {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.est
}

func (l *ledger) tokens(size int) int { return l.estimator().of(size) }

// learnedWindow is the window a provider named for model, 0 if none.
func (l *ledger) learnedWindow(model string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.learned[model]
}

func (l *ledger) totalCost() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cost
}

// UsageReport is a session's token accounting, for /usage and the
// editor's context bar.
type UsageReport struct {
	// Model is the session's model now; Size its window and Threshold
	// the tokens past which a request is compacted first.
	Model           string
	Size, Threshold int
	// Used is the tokens in context after the latest response (or
	// compaction), 0 before any; Known reports that the provider counted
	// them (else they are the agent's estimate).
	Used  int
	Known bool
	// Requests counts the model responses with usage; Prompt, Completion
	// and Cached sum their counts.
	Requests, Prompt, Completion, Cached int
	// Compactions counts the compactions so far.
	Compactions int
	// Cost is the session's cost so far in Currency ("" when no price is
	// configured).
	Cost     float64
	Currency string
}

// Usage reports the session's accounting. It never blocks behind a turn.
func (s *Session) Usage() UsageReport {
	model := s.Model()
	l := s.acct
	l.mu.Lock()
	r := UsageReport{
		Model: model, Requests: l.requests, Prompt: l.prompt, Completion: l.completion,
		Cached: l.cached, Compactions: l.compactions, Cost: l.cost, Currency: l.currency,
	}
	if l.haveLast {
		r.Used, r.Known = l.last.Used, l.last.Known && !l.last.Estimated
	}
	l.mu.Unlock()
	r.Size, r.Threshold = s.window(model), s.threshold(model)
	r.Used = min(r.Used, r.Size)
	if s.cfg.Price != nil && r.Currency == "" {
		r.Currency = s.cfg.Price.Currency
	}
	return r
}

// usageEvent is the accounting after resp answered req (of size, in the
// agent's measure); withCalls reports that the answer made tool calls,
// whose reasoning the next request carries back.
func (s *Session) usageEvent(model string, size int, resp llm.Response, withCalls bool) event.Usage {
	window := s.window(model)
	u := event.Usage{Model: model, Size: window, RequestSize: size}
	var used int
	if resp.Usage.Known {
		ru := resp.Usage
		u.Known, u.Prompt, u.Completion, u.Cached, u.Reasoning = true, ru.PromptTokens, ru.CompletionTokens, ru.CachedTokens, ru.ReasoningTokens
		used = ru.PromptTokens + ru.CompletionTokens
		if !withCalls || s.cfg.OmitToolCallReasoning {
			used -= ru.ReasoningTokens // not sent back: not in context any more
		}
	} else {
		answer := msgSize(llm.Message{Content: resp.Text})
		for _, c := range resp.ToolCalls {
			answer += len(c.ID) + len(c.Name) + len(c.Args) + callOverhead
		}
		used = s.acct.tokens(size + answer)
	}
	u.Used = min(max(used, 0), window)
	if p := s.cfg.Price; p != nil {
		u.Cost, u.Currency = s.acct.totalCost()+p.cost(resp.Usage), p.Currency
	}
	return u
}
