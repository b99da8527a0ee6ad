package acp

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/presentation"
	"github.com/dsh-acp/dsh-acp/tools"
)

// updateSender writes session/update notifications; *sdk.AgentSideConnection
// satisfies it.
type updateSender interface {
	SessionUpdate(ctx context.Context, n sdk.SessionNotification) error
}

// cardIntents gives a tool call's card intents by tool name (a generic card
// for a name it does not know); *tools.Set satisfies it.
type cardIntents interface {
	PresentCall(name string, args json.RawMessage) tools.CallIntent
	PresentResult(name string, args json.RawMessage, res tools.Result) tools.ResultIntent
}

// presenter turns one session's events into session/update notifications,
// through the same card intents and presentation bridge live and on replay.
// Emit is called in event order; ToolOutput may arrive from an executor
// goroutine while the turn's goroutine waits for the tool.
type presenter struct {
	send      updateSender
	sessionID string
	cwd       string
	caps      presentation.Caps
	box       cardIntents
	log       *zap.Logger
	flush     flushPolicy
	// replaying marks a session/load: user prompts are echoed and recorded
	// output is sent in one piece.
	replaying bool

	mu    sync.Mutex
	cards map[string]openCard // by tool call id, from tool_call to the final update
}

// openCard is what a card needs between its opening and its final update.
type openCard struct {
	intent tools.CallIntent
	stream *cardStream // live output; nil unless a live terminal card
}

// flushPolicy bounds how often live output reaches a card.
type flushPolicy struct {
	interval time.Duration
	bytes    int
}

func (p *presenter) Emit(ev agent.Event) {
	switch e := ev.(type) {
	case agent.UserPrompt:
		if p.replaying {
			p.sendUpdate(sdk.UpdateUserMessageText(e.Text))
		}
	case agent.TextDelta:
		p.sendUpdate(sdk.UpdateAgentMessageText(e.Text))
	case agent.ThoughtDelta:
		p.sendUpdate(sdk.UpdateAgentThoughtText(e.Text))
	case agent.ErrorMessage:
		p.sendUpdate(sdk.UpdateAgentMessageText(e.Text))
	case agent.AssistantMessage:
		if p.replaying {
			if e.Reasoning != "" {
				p.sendUpdate(sdk.UpdateAgentThoughtText(e.Reasoning))
			}
			if e.Text != "" {
				p.sendUpdate(sdk.UpdateAgentMessageText(e.Text))
			}
		}
	case agent.ToolCall:
		p.openCard(e)
	case agent.ToolOutput:
		p.mu.Lock()
		s := p.cards[e.ID].stream
		p.mu.Unlock()
		if s != nil {
			s.append(e.Data)
		}
	case agent.ToolResult:
		p.closeCard(e)
	}
}

func (p *presenter) openCard(e agent.ToolCall) {
	card := openCard{intent: p.box.PresentCall(e.Name, e.Args)}
	p.sendUpdate(presentation.OpenCard(e.ID, card.intent, p.cwd, p.caps))
	if !p.replaying && card.intent.Card == tools.CardTerminal && p.caps.Terminal {
		card.stream = newCardStream(p.flush, func(data string) {
			if u, ok := presentation.CardOutput(e.ID, data, p.caps); ok {
				p.sendUpdate(u)
			}
		})
	}
	p.mu.Lock()
	if p.cards == nil {
		p.cards = map[string]openCard{}
	}
	p.cards[e.ID] = card
	p.mu.Unlock()
}

func (p *presenter) closeCard(e agent.ToolResult) {
	p.mu.Lock()
	card, ok := p.cards[e.ID]
	delete(p.cards, e.ID)
	p.mu.Unlock()
	if card.stream != nil {
		card.stream.close() // everything streamed goes out before the final update
	}
	if !ok { // a result whose call was never shown (an old journal)
		card.intent = p.box.PresentCall(e.Name, e.Args)
	}
	intent := p.box.PresentResult(e.Name, e.Args, e.Result)
	for _, u := range presentation.CloseCard(e.ID, card.intent, intent, p.caps, card.stream != nil) {
		p.sendUpdate(u)
	}
}

// sendUpdate writes one update. It never uses a turn's context: the final
// update of a cancelled turn must still go out.
func (p *presenter) sendUpdate(u sdk.SessionUpdate) {
	err := p.send.SessionUpdate(context.Background(), sdk.SessionNotification{
		SessionId: sdk.SessionId(p.sessionID),
		Update:    u,
	})
	if err != nil && p.log != nil {
		p.log.Debug("session/update not sent", zap.String("session", p.sessionID), zap.Error(err))
	}
}

// cardStream coalesces a card's live output: at most one update per
// interval, or sooner once bytes have piled up. append never blocks on the
// client (the tool already capped what a card may receive).
type cardStream struct {
	policy flushPolicy
	write  func(string)

	mu      sync.Mutex
	pending []byte
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

func newCardStream(policy flushPolicy, write func(string)) *cardStream {
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
func (s *cardStream) run() {
	defer close(s.done)
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
	wait := s.policy.interval - time.Since(last)
	if wait <= 0 || s.size() >= s.policy.bytes {
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
			if s.size() >= s.policy.bytes {
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
