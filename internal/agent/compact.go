package agent

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/llm"
)

// Compaction keeps a session's history inside its model's context window.
// Before a request whose estimated size passes the threshold (a share of
// the window), after the provider refused one as too long, and on /compact,
// the session compacts in two passes and records what it did as one
// event.Compaction, which history.apply carries out — live and on restore
// alike, so a reloaded session's next request is the live one's:
//
//  1. elision: old command outputs, oldest first, are cut to their first and
//     last lines (elide) until the estimate is under the target; the newest
//     keepOutputs outputs stay whole;
//  2. summary: if that is not enough, the model summarizes the older turns
//     in a request of its own (nothing of it streams to the user), and the
//     summary replaces them; the newest turns stay verbatim while they fit
//     the target. When the summary cannot be made, those turns are dropped
//     with a note saying so, so the session is never left too long.

// DefaultCompactThreshold is the share of the window past which the
// history is compacted before a request.
const DefaultCompactThreshold = 0.8

const (
	// compactTarget is the share of the threshold a compaction aims at,
	// so that the next one is a while off (and the provider's prompt cache
	// is not thrown away at every request).
	compactTarget = 0.5
	// keepOutputs newest outputs are never elided.
	keepOutputs = 2
	// keepTurns newest turns stay verbatim on /compact.
	keepTurns = 2
	// summaryShare of the window is the most a summary may take, and
	// summaryInputShare the most the summary request's transcript may.
	summaryShare      = 0.1
	summaryInputShare = 0.5
	// summaryMaxChars bounds a summary whatever the window.
	summaryMaxChars = 24 << 10
)

//go:embed summary.md
var summaryText string

// summaryPrompt is the summary request's system prompt, for a summary of
// at most about words words. (Its one field is filled by hand: text/template
// would keep every exported method of the binary from being dropped.)
func summaryPrompt(words int) string {
	return strings.TrimSpace(strings.ReplaceAll(summaryText, "{{.Words}}", strconv.Itoa(words)))
}

// compactJob is one compaction to plan.
type compactJob struct {
	reason string
	model  string
	size   int // the next request's size, in the agent's measure
	fixed  int // the part of size that is not history: system prompt, tools
	before int // the next request's tokens (estimated, or the provider's count)
	target int // tokens to get down to (0: as far as the rules allow)
	window int // the model's window, lowered to what the provider named
	est    estimator
	// tooLong is the provider's refusal, for the too-long reason.
	tooLong *llm.Error
}

// newJob plans a compaction of the history for req.
func (s *Session) newJob(reason, model string, req llm.Request, tooLong *llm.Error) compactJob {
	j := compactJob{reason: reason, model: model, size: requestSize(req), est: s.acct.estimator(), tooLong: tooLong}
	j.fixed = toolsSize(req.Tools)
	if len(req.Messages) > 0 {
		j.fixed += msgSize(req.Messages[0])
	}
	j.before = j.est.of(j.size)
	j.window = s.window(model)
	if tooLong != nil {
		if pw := tooLong.ContextWindow; pw > 0 && pw < j.window {
			j.window = pw
		}
		// The provider's count is the truth; without one, the request was at
		// least one token over the window.
		if tooLong.RequestedTokens > 0 {
			j.before = tooLong.RequestedTokens
		} else {
			j.before = max(j.before, j.window+1)
		}
		j.est = estimator{tokens: j.before, size: j.size}
	}
	if reason != event.CompactCommand {
		j.target = int(float64(j.window) * s.cfg.CompactThreshold * compactTarget)
	}
	return j
}

// compact plans and records one compaction for job, and returns it. It
// reports false when there was nothing to compact (and records nothing).
// When ctx ends during the summary request, the elision planned before it
// is still recorded.
func (s *Session) compact(ctx context.Context, job compactJob) (event.Compaction, bool) {
	start := time.Now()
	c := event.Compaction{Reason: job.reason, Model: job.model, Before: job.before, Size: job.window}
	if e := job.tooLong; e != nil {
		c.RequestTokens, c.RequestSize = job.before, job.size
		if e.ContextWindow > 0 && e.ContextWindow == job.window {
			c.ProviderWindow = e.ContextWindow
		}
	}
	view := s.hist.planElision(job)
	c.ElideBefore, c.Elided = view.elideBefore, view.elided
	after := job.est.of(job.fixed + view.total)
	if after > job.target && s.model != nil && ctx.Err() == nil {
		if cut := s.hist.planCut(view, job); cut > 0 {
			after = s.summarizeInto(ctx, &c, view, cut, job)
		}
	}
	if c.Elided == 0 && c.SummaryBefore == 0 {
		s.log.Debug("nothing to compact", zap.String("reason", job.reason), zap.Int("tokens", job.before))
		return c, false
	}
	c.After = after
	if s.cfg.Price != nil && c.Currency == "" {
		c.Cost, c.Currency = s.acct.totalCost(), s.cfg.Price.Currency
	}
	c.Note = compactionNote(c)
	s.hist.virtual(&c) // entry indices in the unbounded numbering (bound.go)
	s.record(c)
	s.log.Info("compacted", zap.String("reason", job.reason), zap.Int("elided", c.Elided), zap.Int("turns", c.Turns),
		zap.Bool("dropped", c.Dropped), zap.Int("before", c.Before), zap.Int("after", c.After), zap.Int("window", c.Size),
		zap.Duration("took", time.Since(start)))
	return c, true
}

// summarizeInto asks the model to summarize the entries before cut and
// fills c in; when it cannot (and ctx did not end) the entries are dropped
// with a note instead. It returns the estimated tokens after.
func (s *Session) summarizeInto(ctx context.Context, c *event.Compaction, view elisionView, cut int, job compactJob) int {
	turns := s.hist.turnsBefore(cut)
	budget := int(float64(c.Size)*summaryInputShare) * max(job.size, 1) / max(job.est.of(job.size), 1)
	text, usage, err := s.summarize(ctx, job.model, s.hist.transcript(view, cut, budget), maxSummary(job))
	if p := s.cfg.Price; p != nil {
		c.Cost, c.Currency = s.acct.totalCost()+p.cost(usage), p.Currency
	}
	switch {
	case ctx.Err() != nil:
		return job.est.of(job.fixed + view.total) // cancelled: the elision alone
	case err != nil:
		c.Dropped, c.SummaryError = true, shortError(err)
		text = fmt.Sprintf("%d earlier turns of this conversation were removed to fit the context window; a summary of them could not be made. "+
			"The user still sees them in the editor: ask if you need something from them.", turns)
		s.log.Warn("summary failed; older turns dropped", zap.Int("turns", turns), zap.Error(err))
	}
	c.SummaryBefore, c.Summary, c.Turns = cut, text, turns
	kept := view.total - view.sizeBefore(cut)
	return job.est.of(job.fixed + kept + msgSize(llm.Message{Content: summaryMessage(*c)}))
}

// summarize makes the summary request: the transcript of the older turns
// under the summary prompt, no tools, nothing streamed to the user.
func (s *Session) summarize(ctx context.Context, model, transcript string, maxChars int) (string, llm.Usage, error) {
	req := llm.Request{
		Model: model,
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: summaryPrompt(max(maxChars/8, 50))},
			{Role: llm.RoleUser, Content: transcript},
		},
		OnRetry: s.onRetry,
	}
	resp, err := s.model.Stream(ctx, req, nil)
	if err != nil {
		return "", resp.Usage, err
	}
	text := strings.TrimSpace(resp.Text)
	if text == "" {
		return "", resp.Usage, errors.New("the model answered with an empty summary")
	}
	if len(text) > maxChars {
		text = strings.ToValidUTF8(text[:maxChars], "") + "\n[… summary cut to fit]"
	}
	return text, resp.Usage, nil
}

// maxSummary is the most characters a summary may take in the job's
// window.
func maxSummary(job compactJob) int {
	tokens := int(float64(job.window) * summaryShare)
	chars := tokens * max(job.size, 1) / max(job.est.of(job.size), 1)
	return min(max(chars, 400), summaryMaxChars)
}

// summaryMessage is the message that stands for the summarized entries.
func summaryMessage(c event.Compaction) string {
	if c.Dropped {
		return "[" + c.Summary + "]"
	}
	return fmt.Sprintf("[Summary of the %d earlier turns of this conversation, made to fit the context window:]\n\n%s", c.Turns, c.Summary)
}

// compactionNote is what the user reads about c.
func compactionNote(c event.Compaction) string {
	var did []string
	switch {
	case c.SummaryBefore > 0 && c.Dropped:
		did = append(did, fmt.Sprintf("dropped %s (the summary request failed: %s)", plural(c.Turns, "older turn"), c.SummaryError))
	case c.SummaryBefore > 0:
		did = append(did, "summarized "+plural(c.Turns, "older turn"))
	}
	if c.Elided > 0 {
		did = append(did, "elided "+plural(c.Elided, "old command output"))
	}
	why := ""
	switch c.Reason {
	case event.CompactTooLong:
		why = " (the provider said it no longer fit)"
	case event.CompactThreshold:
		why = " (it neared the model's window)"
	}
	note := fmt.Sprintf("\n[context compacted%s: %s; %s → %s of %s tokens",
		why, strings.Join(did, ", "), percentText(c.Before, c.Size), percentText(c.After, c.Size), groupDigits(c.Size))
	if c.After > c.Size {
		note += ". It still does not fit: the newest turn alone is too long. Start a new session, or pick a model with a larger window (/model)"
	}
	return note + "]\n\n"
}

// percentText is n as a share of of, for people: "23 %", "<1 %".
func percentText(n, of int) string {
	p := percent(n, of)
	if p == 0 && n > 0 {
		return "<1 %"
	}
	return fmt.Sprintf("%d %%", p)
}

func percent(n, of int) int {
	if of <= 0 {
		return 0
	}
	return int((int64(n)*100 + int64(of)/2) / int64(of))
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// groupDigits writes n with thousands separated by commas.
func groupDigits(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// shortError is err in a few words for a note.
func shortError(err error) string {
	var e *llm.Error
	if errors.As(err, &e) {
		return clipText(e.Kind.Error(), 120)
	}
	return clipText(err.Error(), 120)
}

// elisionView is the history as an elision plan leaves it: each entry's
// size after the plan, their total, and the contents the plan changes.
type elisionView struct {
	elideBefore, elided int
	sizes               []int
	total               int
	short               map[int]string // new contents, by entry index
}

// sizeBefore is the size of the entries before i.
func (v elisionView) sizeBefore(i int) int {
	n := 0
	for _, s := range v.sizes[:i] {
		n += s
	}
	return n
}

func (v elisionView) content(h *history, i int) string {
	if c, ok := v.short[i]; ok {
		return c
	}
	return h.entries[i].msg.Content
}

// planElision elides outputs oldest first, all but the newest keepOutputs,
// until the job's estimate is under its target; it changes nothing.
func (h *history) planElision(job compactJob) elisionView {
	v := elisionView{sizes: make([]int, len(h.entries)), short: map[int]string{}}
	for i, e := range h.entries {
		v.sizes[i] = msgSize(e.msg)
		v.total += v.sizes[i]
	}
	last := len(h.entries)
	for seen := 0; last > 0 && seen < keepOutputs; {
		last--
		if h.entries[last].isOutput() {
			seen++
		}
	}
	for i := 0; i < last && job.est.of(job.fixed+v.total) > job.target; i++ {
		e := h.entries[i]
		if !e.isOutput() || e.elided {
			continue
		}
		v.elideBefore = i + 1
		short := elide(e.msg.Content)
		if len(short) == len(e.msg.Content) {
			continue
		}
		saved := len(e.msg.Content) - len(short)
		v.short[i] = short
		v.sizes[i] -= saved
		v.total -= saved
		v.elided++
	}
	return v
}

// planCut picks where the summary ends. For /compact, that is the start of
// the keepTurns newest turns. Otherwise it is the earliest start of a turn
// whose turns, kept verbatim, fit the target (so the newest turns stay);
// if even the newest turn does not fit, the earliest point inside it that
// does, and failing that the latest (the newest model message and its
// results). A cut never separates a tool call from its result. 0 means
// there is nothing to summarize.
func (h *history) planCut(v elisionView, job compactJob) int {
	starts := h.turnStarts()
	if job.reason == event.CompactCommand {
		if len(starts) <= keepTurns || h.summarizesNothing(starts[len(starts)-keepTurns]) {
			return 0
		}
		return starts[len(starts)-keepTurns]
	}
	n := len(h.entries)
	kept := make([]int, n+1) // kept[i]: the size of entries[i:]
	for i := n - 1; i >= 0; i-- {
		kept[i] = kept[i+1] + v.sizes[i]
	}
	reserve := maxSummary(job) / 2
	fits := func(i int) bool { return job.est.of(job.fixed+reserve+kept[i]) <= job.target }
	for _, i := range starts {
		if i > 0 && fits(i) {
			return i
		}
	}
	from := 1
	if len(starts) > 0 {
		from = max(starts[len(starts)-1], 1)
	}
	latest := 0
	for i := from; i < n; i++ {
		if h.entries[i].kind == kindOutput {
			continue
		}
		if fits(i) {
			return i
		}
		latest = i
	}
	if h.summarizesNothing(latest) {
		return 0
	}
	return latest
}

// summarizesNothing reports whether a cut at i would only re-summarize an
// earlier summary.
func (h *history) summarizesNothing(i int) bool {
	return i <= 0 || (i == 1 && h.entries[0].kind == kindSummary)
}

// turnStarts are the indices where the user's turns begin (a turn's
// notices, delivered before its prompt, belong to it), in order.
func (h *history) turnStarts() []int {
	var starts []int
	for i, e := range h.entries {
		if !e.startsTurn() {
			continue
		}
		j := i
		for j > 0 && h.entries[j-1].kind == kindNotice {
			j--
		}
		starts = append(starts, j)
	}
	return starts
}

// turnsBefore counts the turns that begin before index cut.
func (h *history) turnsBefore(cut int) int {
	n := 0
	for _, e := range h.entries[:cut] {
		if e.startsTurn() {
			n++
		}
	}
	return n
}

// transcript renders the entries before cut for the summary request, at
// most about budget characters: each entry clipped, and the oldest left
// out (after an earlier summary, which is always kept) when they are still
// too many.
func (h *history) transcript(v elisionView, cut, budget int) string {
	budget = max(budget, 4000)
	per := max(budget/8, 1000)
	parts := make([]string, 0, cut)
	for i := range cut {
		parts = append(parts, transcriptPart(h.entries[i], clipMiddle(v.content(h, i), per)))
	}
	first := 0
	if cut > 0 && h.entries[0].kind == kindSummary {
		first = 1
	}
	total := 0
	for _, p := range parts {
		total += len(p)
	}
	drop := first
	for total > budget && drop < len(parts)-1 {
		total -= len(parts[drop])
		drop++
	}
	var b strings.Builder
	b.WriteString("<conversation>\n")
	for _, p := range parts[:first] {
		b.WriteString(p)
	}
	if drop > first {
		fmt.Fprintf(&b, "[… %d earlier messages left out: too long to summarize at once …]\n\n", drop-first)
	}
	for _, p := range parts[drop:] {
		b.WriteString(p)
	}
	b.WriteString("</conversation>\n\nSummarize the conversation above, as your instructions say.")
	return b.String()
}

func transcriptPart(e entry, content string) string {
	var b strings.Builder
	switch e.kind {
	case kindPrompt:
		b.WriteString("[user]\n")
	case kindNotice:
		b.WriteString("[notice]\n")
	case kindAssistant:
		b.WriteString("[assistant]\n")
	case kindOutput:
		b.WriteString("[tool result]\n")
	case kindDirect:
		b.WriteString("[user's own command]\n")
	case kindSummary:
		b.WriteString("[summary of still earlier turns]\n")
	}
	if content != "" {
		b.WriteString(content)
		b.WriteByte('\n')
	}
	for _, c := range e.msg.ToolCalls {
		fmt.Fprintf(&b, "(called %s %s)\n", c.Name, clipMiddle(c.Args, 600))
	}
	b.WriteByte('\n')
	return b.String()
}

// clipMiddle keeps about n bytes of s: its start and end.
func clipMiddle(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := n*2/3, n/3
	for head > 0 && head < len(s) && s[head]&0xC0 == 0x80 {
		head--
	}
	at := len(s) - tail
	for at < len(s) && s[at]&0xC0 == 0x80 {
		at++
	}
	return s[:head] + fmt.Sprintf(" [… %d bytes …] ", at-head) + s[at:]
}
