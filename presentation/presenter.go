package presentation

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	acp "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/tools"
)

// CardIntents gives a tool call's card intents by tool name, with a
// generic card for a name it does not know; *tools.Registry satisfies it.
type CardIntents interface {
	PresentCall(name string, args json.RawMessage) tools.CallIntent
	PresentResult(name string, args json.RawMessage, res event.Result) tools.ResultIntent
}

// FlushPolicy bounds how often live output reaches a card. The first chunk
// after a quiet Interval goes out at once (leading edge); what arrives
// sooner is gathered and sent Interval after the previous send, so a card
// gets at most one flush per Interval and no chunk waits longer than one.
// Bytes caps the data of one update: a flush holding more sends it as
// several updates, back to back, each cut on a character boundary, so no
// single line of the wire grows with the output. Fallback is the interval
// of a fallback card (a client without the terminal _meta), whose every
// update re-sends the card's tail (see fallback.go). The zero value takes
// the defaults (one frame at 60 Hz, 64 KiB, one second).
type FlushPolicy struct {
	Interval time.Duration
	Bytes    int
	Fallback time.Duration
}

// Flush policy defaults: DefaultFlushInterval is one frame at 60 Hz.
const (
	DefaultFlushInterval    = time.Second / 60
	DefaultFlushBytes       = 64 << 10
	DefaultFallbackInterval = time.Second
)

func (f FlushPolicy) withDefaults() FlushPolicy {
	if f.Interval <= 0 {
		f.Interval = DefaultFlushInterval
	}
	if f.Bytes <= 0 {
		f.Bytes = DefaultFlushBytes
	}
	if f.Fallback <= 0 {
		f.Fallback = DefaultFallbackInterval
	}
	return f
}

// PresenterOptions configure a Presenter. Send and Cards are required.
type PresenterOptions struct {
	// Send writes one update of the session. It is called from the
	// goroutine that emits (and, for coalesced live output, from a flush
	// timer's goroutine), one call at a time per card; it must not block
	// for long and never sees a turn's context: a cancelled turn's final
	// update must still go out.
	Send func(acp.SessionUpdate)
	// SendExtension writes one update of a shape the SDK lacks (schema.go);
	// nil draws those facts as text, as for a client without them.
	SendExtension func(update any)
	// Cards gives each call's card intents.
	Cards CardIntents
	// Caps are the client's capabilities.
	Caps Caps
	// Cwd is the directory a relative card cwd is resolved against.
	Cwd string
	// Location, when set, names a terminal card's directory for display:
	// an executor running commands on another machine turns "/srv/p"
	// into "host:/srv/p" (executor.Remote's Location).
	Location func(dir string) string
	// Flush coalesces live output.
	Flush FlushPolicy
	// Contents gives the change cards' texts (the change store); nil lists
	// every changed file without its diff.
	Contents Contents
	// Replay marks a presenter drawing a recorded session (session/load,
	// `dsh-acp replay`): user prompts and whole assistant messages are
	// drawn (live, the client typed the one and saw the other stream), and
	// recorded output goes out in one piece.
	Replay bool
}

// Presenter turns one session's events into session updates, through the
// same card intents and bridge functions live and on replay. Emit is
// called in event order; ToolOutput may arrive from an executor goroutine
// while the turn's goroutine waits for the tool. A reload draws through a
// Presenter of its own.
type Presenter struct {
	opt PresenterOptions

	mu    sync.Mutex
	cards map[string]openCard // by tool call id, from tool_call to the final update
	// plan is what the client shows of a plan (see plan.go).
	plan planState
}

// openCard is what a card needs between its opening and its final update.
type openCard struct {
	intent tools.CallIntent
	stream *cardStream // live output; nil unless a live terminal card
	// fallback marks stream as a fallback card's: its final update is
	// drawn from the result, so what is pending at the end is dropped.
	fallback bool
}

// NewPresenter returns a presenter with opt (see PresenterOptions).
func NewPresenter(opt PresenterOptions) *Presenter {
	opt.Flush = opt.Flush.withDefaults()
	return &Presenter{opt: opt, cards: map[string]openCard{}}
}

// Emit draws ev.
func (p *Presenter) Emit(ev event.Event) {
	switch e := ev.(type) {
	case event.UserPrompt:
		p.clearPlan()
		if p.opt.Replay {
			p.opt.Send(acp.UpdateUserMessageText(e.Text))
		}
	case event.TextDelta:
		p.opt.Send(acp.UpdateAgentMessageText(e.Text))
	case event.ThoughtDelta:
		p.opt.Send(acp.UpdateAgentThoughtText(e.Text))
	case event.ErrorMessage:
		p.opt.Send(acp.UpdateAgentMessageText(e.Text))
	case event.AssistantMessage:
		if p.opt.Replay {
			if e.Reasoning != "" {
				p.opt.Send(acp.UpdateAgentThoughtText(e.Reasoning))
			}
			if e.Text != "" {
				p.opt.Send(acp.UpdateAgentMessageText(e.Text))
			}
		}
	case event.ToolCall:
		p.openCard(e)
	case event.ToolOutput:
		p.mu.Lock()
		s := p.cards[e.ID].stream
		p.mu.Unlock()
		if s != nil {
			s.append(e.Data)
		}
	case event.ToolResult:
		p.closeCard(e)
	case event.Usage:
		p.opt.Send(UsageUpdate(e.Used, e.Size, e.Cost, e.Currency))
	case event.Compaction:
		if p.opt.Caps.Session.Compaction && p.opt.SendExtension != nil {
			p.opt.SendExtension(NewCompactionUpdate(e))
		} else {
			p.opt.Send(acp.UpdateAgentMessageText(e.Note))
		}
	case event.Command:
		if p.opt.Replay {
			p.opt.Send(acp.UpdateUserMessageText(e.Text))
		}
	case event.Info:
		p.opt.Send(acp.UpdateAgentMessageText(e.Text))
	case event.Instructions:
		p.opt.Send(acp.UpdateAgentThoughtText(InstructionsText(e)))
	case event.FileChanges:
		p.opt.Send(ChangesCard(e, p.opt.Contents))
	}
}

// TakesNotices reports whether Notice draws a notice update (the client
// opted in), not text.
func (p *Presenter) TakesNotices() bool {
	return p.opt.Caps.Session.Notices && p.opt.SendExtension != nil
}

// Notice draws an out-of-turn fact: a notice update for a client that
// takes them, else n's text as an agent message chunk.
func (p *Presenter) Notice(n Notice) {
	if p.TakesNotices() {
		p.opt.SendExtension(n)
		return
	}
	p.opt.Send(acp.UpdateAgentMessageText(n.Text()))
}

// UsageUpdate is the usage_update of used tokens in a window of size, with
// the session's cost when a price is configured (currency set).
func UsageUpdate(used, size int, cost float64, currency string) acp.SessionUpdate {
	u := &acp.SessionUsageUpdate{Used: min(used, size), Size: size}
	if currency != "" {
		u.Cost = &acp.Cost{Amount: cost, Currency: currency}
	}
	return acp.SessionUpdate{UsageUpdate: u}
}

// InstructionsText is the thought that says which project instructions
// the session reads.
func InstructionsText(e event.Instructions) string {
	if len(e.Files) == 0 {
		return "No project instructions any more (no AGENTS.md is left).\n\n"
	}
	cut := ""
	if e.Cut {
		cut = ", cut to fit"
	}
	return fmt.Sprintf("Reading the project instructions in %s (%d bytes%s).\n\n", strings.Join(e.Files, " and "), e.Bytes, cut)
}

// Asking returns the tool call to show in the permission question about
// the open call id (its card opened pending: see event.ToolCall.Pending):
// the same title, kind and input as its card, status pending.
func (p *Presenter) Asking(id string) acp.ToolCallUpdate {
	p.mu.Lock()
	intent := p.cards[id].intent
	p.mu.Unlock()
	return PermissionToolCall(id, intent, p.opt.Caps)
}

// Allowed marks a call that was asked about as running again.
func (p *Presenter) Allowed(id string) {
	running := acp.ToolCallStatusInProgress
	p.opt.Send(acp.SessionUpdate{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: acp.ToolCallId(id), Status: &running}})
}

func (p *Presenter) openCard(e event.ToolCall) {
	card := openCard{intent: p.opt.Cards.PresentCall(e.Name, e.Args)}
	open := OpenCard(e.ID, card.intent, p.opt.Cwd, p.opt.Caps)
	if e.Pending {
		open.ToolCall.Status = acp.ToolCallStatusPending
	}
	p.opt.Send(LocateCard(open, p.opt.Location))
	switch {
	case p.opt.Replay || card.intent.Card != tools.CardTerminal:
	case p.opt.Caps.Terminal:
		card.stream = newCardStream(p.opt.Flush, func(data string) {
			if u, ok := CardOutput(e.ID, data, p.opt.Caps); ok {
				p.opt.Send(u)
			}
		})
	default:
		card.stream, card.fallback = p.fallbackStream(e.ID, card.intent), true
	}
	p.mu.Lock()
	p.cards[e.ID] = card
	p.mu.Unlock()
}

func (p *Presenter) closeCard(e event.ToolResult) {
	p.mu.Lock()
	card, ok := p.cards[e.ID]
	delete(p.cards, e.ID)
	p.mu.Unlock()
	var tail string
	switch {
	case card.fallback:
		card.stream.discard()
		card.stream = nil // the final update shows the result's output
	case card.stream != nil:
		// What was streamed goes out first; what is still pending rides on
		// the final update (Zed applies a terminal's output before its
		// exit), so ending a card never adds an update outside the frame.
		tail = card.stream.finish()
	}
	if !ok { // a result whose call was never shown (an old journal)
		card.intent = p.opt.Cards.PresentCall(e.Name, e.Args)
	}
	intent := p.opt.Cards.PresentResult(e.Name, e.Args, e.Result)
	updates := CloseCard(e.ID, card.intent, intent, p.opt.Caps, card.stream != nil)
	if tail != "" {
		updates = withTail(updates, e.ID, tail)
	}
	for _, u := range updates {
		p.opt.Send(u)
	}
	p.setPlan(intent.Plan)
}

// fallbackStream is a live fallback card's stream: output gathers in a
// bounded tail, and each flush (at most one per Flush.Fallback) re-sends
// the card's content with it.
func (p *Presenter) fallbackStream(callID string, opened tools.CallIntent) *cardStream {
	live := &fallbackLive{}
	s := newCardStream(FlushPolicy{Interval: p.opt.Flush.Fallback, Bytes: fallbackKeep}, live.add)
	s.flushed = func() { p.opt.Send(fallbackProgress(callID, opened, live.text())) }
	return s
}

// withTail puts the last live output of a terminal card before the output
// (a reason line) its final update carries, or adds it there.
func withTail(updates []acp.SessionUpdate, callID, tail string) []acp.SessionUpdate {
	final := updates[len(updates)-1].ToolCallUpdate
	if final == nil || final.Meta == nil {
		if u, ok := CardOutput(callID, tail, Caps{Terminal: true}); ok {
			return append([]acp.SessionUpdate{u}, updates...)
		}
		return updates
	}
	data := tail
	if out, ok := final.Meta[metaTerminalOutput].(terminalOutput); ok {
		data += out.Data
	}
	final.Meta[metaTerminalOutput] = terminalOutputOf(callID, data)
	return updates
}

// cardStream coalesces a card's live output (see FlushPolicy). A leading
// edge is written by the appending goroutine itself (Send must not block
// for long); the rest by a timer one Interval after the previous flush, or
// by an append that finds that time passed before the timer ran. The
// stream keeps the strings it is given and copies only to join short ones
// into one update.
type cardStream struct {
	policy FlushPolicy
	write  func(string)
	// flushed, when set, runs after each timed or leading-edge flush that
	// wrote something, under the sending lock (a fallback card sends its
	// update there: one per flush, however many pieces it wrote).
	flushed func()

	sending sync.Mutex // held while writing: one flush at a time, in order

	mu      sync.Mutex
	pending []string
	last    time.Time   // the start of the previous flush; zero: none yet
	timer   *time.Timer // the trailing flush, while one is scheduled
	due     time.Time   // when it is
	gen     uint64      // counts flushes; a timer of an earlier one is stale
	closed  bool
}

func newCardStream(policy FlushPolicy, write func(string)) *cardStream {
	return &cardStream{policy: policy, write: write}
}

// append queues data; it is written at once when the previous flush is an
// Interval old (or there was none), else when it becomes so.
func (s *cardStream) append(data string) {
	if data == "" {
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.pending = append(s.pending, data)
	now := time.Now()
	var flushNow bool
	switch {
	case s.timer == nil && (s.last.IsZero() || now.Sub(s.last) >= s.policy.Interval):
		flushNow = true // a leading edge
	case s.timer == nil:
		gen := s.gen
		s.due = s.last.Add(s.policy.Interval)
		s.timer = afterFrame(s.due, func() {
			// A panic in write on the timer's goroutine drops that flush
			// instead of ending the daemon (on the appending goroutine,
			// the agent's output sink contains it).
			defer func() { _ = recover() }()
			s.flush(gen)
		})
	case !now.Before(s.due):
		flushNow = true // the trailing flush is due and its timer has not run
	}
	gen := s.gen
	s.mu.Unlock()
	if flushNow {
		s.flush(gen)
	}
}

// flush writes what is pending, unless another flush came first (gen is
// the generation it was meant for) or the stream closed (close writes the
// rest itself).
func (s *cardStream) flush(gen uint64) {
	s.sending.Lock()
	defer s.sending.Unlock()
	s.mu.Lock()
	if s.closed || gen != s.gen {
		s.mu.Unlock()
		return
	}
	data := s.pending
	s.pending = nil
	s.gen++
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	if len(data) > 0 {
		s.last = time.Now()
	}
	s.mu.Unlock()
	s.send(data)
	if len(data) > 0 && s.flushed != nil {
		s.flushed()
	}
}

// discard closes the stream, dropping what is pending, after any flush
// under way; nothing is written after it returns.
func (s *cardStream) discard() {
	s.sending.Lock()
	defer s.sending.Unlock()
	s.stop()
}

// finish is close, except that it returns the last update's worth of
// what is pending (at most Bytes, cut on a character boundary) instead of
// writing it: the caller sends it with the card's final update.
func (s *cardStream) finish() string {
	s.sending.Lock()
	defer s.sending.Unlock()
	pieces := s.stop()
	// Keep the last Bytes (from a character start) for the final update;
	// send what comes before, uncopied.
	keep := 0
	i := len(pieces)
	for i > 0 && keep+len(pieces[i-1]) <= s.policy.Bytes {
		i--
		keep += len(pieces[i])
	}
	if i > 0 { // pieces[i-1] straddles the cut
		p := pieces[i-1]
		n := len(p) - (s.policy.Bytes - keep)
		for n < len(p) && !utf8.RuneStart(p[n]) {
			n++
		}
		head := append(pieces[:i-1:i-1], p[:n])
		s.send(head)
		pieces = append([]string{p[n:]}, pieces[i:]...)
	}
	return strings.Join(pieces, "")
}

// close writes whatever is pending, after any flush under way; nothing is
// written after it returns.
func (s *cardStream) close() {
	s.sending.Lock()
	defer s.sending.Unlock()
	s.send(s.stop())
}

// stop closes the stream (no flush is armed again) and takes what is
// pending. The caller holds sending, so a flush under way has finished.
func (s *cardStream) stop() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	pieces := s.pending
	s.pending = nil
	return pieces
}

// send writes pieces in order, in updates of at most policy.Bytes, each
// ending on a character boundary: a long piece is cut (without a copy),
// short ones are joined.
func (s *cardStream) send(pieces []string) {
	var b batch
	for _, p := range pieces {
		for p != "" {
			n := cut(p, s.policy.Bytes-b.len())
			if n == 0 && b.len() > 0 {
				s.write(b.take())
				continue
			}
			if n == 0 { // one character longer than an update: keep it whole
				_, n = utf8.DecodeRuneInString(p)
			}
			b.add(p[:n])
			p = p[n:]
			if p != "" || b.len() >= s.policy.Bytes {
				s.write(b.take())
			}
		}
	}
	if b.len() > 0 {
		s.write(b.take())
	}
}

// cut is the length of the longest prefix of p, at most n bytes, that
// ends on a character boundary.
func cut(p string, n int) int {
	if n >= len(p) {
		return len(p)
	}
	for n > 0 && !utf8.RuneStart(p[n]) {
		n--
	}
	return n
}

// batch gathers one update's data, copying only to join pieces.
type batch struct {
	one  string          // the only piece so far, not copied
	many strings.Builder // two pieces or more
}

func (b *batch) len() int { return len(b.one) + b.many.Len() }

func (b *batch) add(p string) {
	switch {
	case b.many.Len() > 0:
		b.many.WriteString(p)
	case b.one == "":
		b.one = p
	default:
		b.many.Grow(len(b.one) + len(p))
		b.many.WriteString(b.one)
		b.many.WriteString(p)
		b.one = ""
	}
}

func (b *batch) take() string {
	out := b.one
	if b.many.Len() > 0 {
		out = b.many.String()
	}
	*b = batch{}
	return out
}
