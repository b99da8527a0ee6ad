package presentation

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

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

// FlushPolicy bounds how often live output reaches a card: at most one
// update per Interval, or sooner once Bytes have piled up. The zero value
// takes the defaults (50 ms, 16 KiB).
type FlushPolicy struct {
	Interval time.Duration
	Bytes    int
}

func (f FlushPolicy) withDefaults() FlushPolicy {
	if f.Interval <= 0 {
		f.Interval = 50 * time.Millisecond
	}
	if f.Bytes <= 0 {
		f.Bytes = 16 << 10
	}
	return f
}

// PresenterOptions configure a Presenter. Send and Cards are required.
type PresenterOptions struct {
	// Send writes one update of the session. It is called from the
	// goroutine that emits (and, for coalesced live output, the card's
	// flush goroutine), one call at a time per card; it must not block for
	// long and never sees a turn's context: a cancelled turn's final
	// update must still go out.
	Send func(acp.SessionUpdate)
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
}

// openCard is what a card needs between its opening and its final update.
type openCard struct {
	intent tools.CallIntent
	stream *cardStream // live output; nil unless a live terminal card
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
		p.opt.Send(acp.UpdateAgentMessageText(e.Note))
	case event.Command:
		if p.opt.Replay {
			p.opt.Send(acp.UpdateUserMessageText(e.Text))
		}
	case event.Info:
		p.opt.Send(acp.UpdateAgentMessageText(e.Text))
	case event.Instructions:
		p.opt.Send(acp.UpdateAgentThoughtText(InstructionsText(e)))
	}
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
	if !p.opt.Replay && card.intent.Card == tools.CardTerminal && p.opt.Caps.Terminal {
		card.stream = newCardStream(p.opt.Flush, func(data string) {
			if u, ok := CardOutput(e.ID, data, p.opt.Caps); ok {
				p.opt.Send(u)
			}
		})
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
	if card.stream != nil {
		card.stream.close() // everything streamed goes out before the final update
	}
	if !ok { // a result whose call was never shown (an old journal)
		card.intent = p.opt.Cards.PresentCall(e.Name, e.Args)
	}
	intent := p.opt.Cards.PresentResult(e.Name, e.Args, e.Result)
	for _, u := range CloseCard(e.ID, card.intent, intent, p.opt.Caps, card.stream != nil) {
		p.opt.Send(u)
	}
}

// cardStream coalesces a card's live output: at most one update per
// interval, or sooner once bytes have piled up. append never blocks on the
// client (the tool already capped what a card may receive).
type cardStream struct {
	policy FlushPolicy
	write  func(string)

	mu      sync.Mutex
	pending []byte
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

func newCardStream(policy FlushPolicy, write func(string)) *cardStream {
	s := &cardStream{
		policy: policy,
		write:  write,
		wake:   make(chan struct{}, 1),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	go s.run()
	return s
}

func (s *cardStream) append(data string) {
	s.mu.Lock()
	s.pending = append(s.pending, data...)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *cardStream) take() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := string(s.pending)
	s.pending = s.pending[:0]
	return out
}

func (s *cardStream) size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}

// run sends pending output when the interval since the last send has passed,
// or at once when a full batch is waiting.
//
// A panic in write stops the pump (what is pending goes out with the
// card's final update) instead of ending the daemon.
func (s *cardStream) run() {
	defer close(s.done)
	defer func() { _ = recover() }()
	var last time.Time
	for {
		select {
		case <-s.stop:
			return
		case <-s.wake:
		}
		if !s.waitForBatch(last) {
			return
		}
		if data := s.take(); data != "" {
			s.write(data)
			last = time.Now()
		}
	}
}

// waitForBatch waits until the interval since last has passed or a full
// batch is pending; false means the stream was closed meanwhile.
func (s *cardStream) waitForBatch(last time.Time) bool {
	wait := s.policy.Interval - time.Since(last)
	if wait <= 0 || s.size() >= s.policy.Bytes {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return false
		case <-t.C:
			return true
		case <-s.wake:
			if s.size() >= s.policy.Bytes {
				return true
			}
		}
	}
}

// close stops the pump and sends whatever is left, synchronously.
func (s *cardStream) close() {
	close(s.stop)
	<-s.done
	if data := s.take(); data != "" {
		s.write(data)
	}
}
