package agent

import (
	"context"
	"fmt"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// Command runs a slash command the user typed (text, as typed) as a turn of
// its own, never sent to the model: it emits Command, then Info with run's
// answer (when not empty), then TurnEnd. run runs while the session holds
// its turn, so no model turn interleaves with it (messages queued with
// QueueInfo are told right after the Command); it must not call the
// session's turn methods. If ctx ends while another turn still runs,
// Command returns Cancelled without emitting anything.
func (s *Session) Command(ctx context.Context, text string, run func(ctx context.Context) string) event.StopReason {
	if !s.acquire(ctx) {
		return event.Cancelled
	}
	defer s.release()
	s.record(event.Command{Text: text})
	s.tellInfos()
	if reply := run(ctx); reply != "" {
		s.record(event.Info{Text: reply})
	}
	s.record(event.TurnEnd{StopReason: event.EndTurn})
	return event.EndTurn
}

// Compact is the /compact command (text, as typed): it compacts the history
// now, whatever the threshold: every old output is elided but the newest
// two, and the turns before the newest two are summarized. It emits Command, then the
// Compaction and an estimated Usage — or an Info saying why there was
// nothing to compact — then TurnEnd (Cancelled when ctx ended the summary
// request).
func (s *Session) Compact(ctx context.Context, text string) event.StopReason {
	if !s.acquire(ctx) {
		return event.Cancelled
	}
	defer s.release()
	s.record(event.Command{Text: text})
	s.tellInfos()
	s.refreshSystem()
	model := s.Model()
	req := s.request(model)
	job := s.newJob(event.CompactCommand, model, req, nil)
	stop := event.EndTurn
	if c, ok := s.compact(ctx, job); ok {
		s.record(event.Usage{Model: model, Used: min(c.After, c.Size), Size: c.Size, Estimated: true, Cost: c.Cost, Currency: c.Currency})
	} else {
		s.record(event.Info{Text: fmt.Sprintf("Nothing to compact: the context holds about %s of %s tokens (%s), "+
			"and the newest outputs and turns always stay whole.\n\n", groupDigits(job.before), groupDigits(job.window), percentText(job.before, job.window))})
	}
	if ctx.Err() != nil {
		stop = event.Cancelled
	}
	s.record(event.TurnEnd{StopReason: stop})
	return stop
}
