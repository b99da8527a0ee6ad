// Package journalsink is the sink that writes a session's events to its
// journal (replay.Journal): what is kept, and what the user is told when
// the journal cannot write.
//
// Contract: Emit and EmitBatch journal every event except the streaming
// ones (text and thought deltas; live tool output, which goes to the
// checkpoints instead: event.OutputCheckpoint at most once a second per
// running call, so a call the daemon dies in replays with what the user
// saw; a call's result ends its checkpoints, as it carries the whole
// output). A batch is one write. When a write fails (a full disk) the user
// is told once, through the session's presenter, with the cause and what
// happens to the records meanwhile (replay.ErrKept, ErrShortened,
// ErrDropped); when writing resumes, they are told so and how many
// records were saved shortened meanwhile. Those notes go to the client
// only, never into the journal. Close stops the checkpoints.
//
// Known limits: a checkpoint pending when the session closes is dropped
// (the call's result, or replay's Settler, closes the card); the notes
// name no record, only how many were shortened.
package journalsink

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/presentation"
	"github.com/dsh-acp/dsh-acp/replay"
)

// Sink records the events worth keeping; streaming-only events (deltas,
// live output) are left out: AssistantMessage and ToolResult carry their
// whole content.
//
// When the journal cannot write (a full disk), the user is told once, in
// the session, with the cause; the journal keeps the records and writes
// them with the next append that fits, and the user is told when saving
// resumed. Those notes go to the client only, never into the journal.
type Sink struct {
	j    *replay.Journal
	log  *zap.Logger
	id   string
	tell event.Sink // the session's presenter

	check checkpoints

	mu      sync.Mutex
	failing bool // the user was told that records wait
	// shortTold is how many shortened records (Journal.Shortened) the user
	// was told of.
	shortTold int
}

// New is the sink of session id's journal j; tell is the session's
// presenter, which draws the notes as notices when it takes them
// (a Notice(presentation.Notice) method), else as error messages.
func New(j *replay.Journal, log *zap.Logger, id string, tell event.Sink) *Sink {
	js := &Sink{j: j, log: log, id: id, tell: tell}
	js.check.write = func(ev event.Event) { js.append(ev) }
	return js
}

// Emit journals ev unless it is a streaming event.
func (js *Sink) Emit(ev event.Event) {
	if js.keep(ev) {
		js.append(ev)
	}
}

// EmitBatch journals the batch's records with one write.
func (js *Sink) EmitBatch(evs []event.Event) {
	kept := make([]event.Event, 0, len(evs))
	for _, ev := range evs {
		if js.keep(ev) {
			kept = append(kept, ev)
		}
	}
	if len(kept) > 0 {
		js.append(kept...)
	}
}

// keep reports whether ev is journaled as it is; live output goes to the
// checkpoints instead, and a result ends its call's checkpoints.
func (js *Sink) keep(ev event.Event) bool {
	switch e := ev.(type) {
	case event.TextDelta, event.ThoughtDelta:
		return false
	case event.ToolOutput:
		js.check.output(e.ID, e.Data)
		return false
	case event.ToolResult:
		js.check.done(e.ID)
	}
	return true
}

// Close stops checkpointing.
func (js *Sink) Close() { js.check.stop() }

func (js *Sink) append(evs ...event.Event) {
	err := js.j.AppendAll(evs...)
	js.mu.Lock()
	defer js.mu.Unlock()
	switch {
	case err == nil && js.failing:
		js.failing = false
		js.log.Info("journal writes resumed", zap.String("session", js.id))
		js.notice(presentation.NewNotice(presentation.SeverityInfo, "History is being saved again",
			"this session is being saved again; "+js.lostNote()))
	case err == nil:
	case !js.failing:
		js.failing = true
		js.log.Error("journal append failed", zap.String("session", js.id), zap.Error(err))
		js.notice(presentation.NewNotice(presentation.SeverityError, "History is not being saved",
			fmt.Sprintf("this session cannot be saved right now (%s). %s", rootCause(err), keptNote(err))))
	default:
		js.log.Debug("journal append failed again", zap.String("session", js.id), zap.Error(err))
	}
}

// lostNote says what the failure cost once writes resume: nothing, or how
// many records were saved shortened since the user was last told. Called
// with mu held.
func (js *Sink) lostNote() string {
	n := js.j.Shortened() - js.shortTold
	js.shortTold += n
	if n <= 0 {
		return "nothing was lost"
	}
	return fmt.Sprintf("%d record(s) were saved shortened meanwhile (their output cut; how each call ended is kept)", n)
}

// notice tells the client n: a notice when tell (the session's presenter)
// draws them, else its text.
func (js *Sink) notice(n presentation.Notice) {
	if p, ok := js.tell.(interface{ Notice(presentation.Notice) }); ok {
		p.Notice(n)
		return
	}
	js.tell.Emit(event.ErrorMessage{Text: n.Text()})
}

// keptNote says what happens to the records that could not be written.
func keptNote(err error) string {
	switch {
	case errors.Is(err, replay.ErrKept):
		return "What happens is kept in memory and saved as soon as the disk has room."
	case errors.Is(err, replay.ErrShortened):
		return "Results are saved shortened meanwhile: their output is cut, how each call ended is kept."
	case errors.Is(err, replay.ErrDropped):
		return "A running command's live output is not saved meanwhile; its result will be."
	}
	return "What happens now may be missing when the session is reloaded."
}

// rootCause is the innermost error's text ("no space left on device").
func rootCause(err error) string {
	for {
		var next error
		switch e := err.(type) {
		case interface{ Unwrap() []error }:
			if errs := e.Unwrap(); len(errs) > 0 {
				next = errs[len(errs)-1]
			}
		case interface{ Unwrap() error }:
			next = e.Unwrap()
		}
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// checkpointEvery is how often, at most, a running call's live output is
// checkpointed into the journal.
const checkpointEvery = time.Second

// checkpoints gathers a session's live card output and journals it as
// event.OutputCheckpoint at most every checkpointEvery per call, so a call
// the daemon dies in replays with what the user saw. The tools cap a
// card's output, so a call's checkpoints stay within event.MaxCardOutput.
type checkpoints struct {
	write func(event.Event) // appends to the journal

	mu sync.Mutex
	// pending is, by call id, the output not yet checkpointed: the
	// chunks themselves (immutable strings, the card's own), handed to
	// the journal as they are (event.OutputCheckpoint.Parts), which
	// writes the line from them: live output is not copied again.
	pending map[string][]string
	timer   *time.Timer
	closed  bool
}

// output takes a live chunk; the first chunk after a flush arms the timer.
func (c *checkpoints) output(id, data string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if c.pending == nil {
		c.pending = map[string][]string{}
	}
	c.pending[id] = append(c.pending[id], data)
	if c.timer == nil {
		c.timer = time.AfterFunc(checkpointEvery, c.flush)
	}
}

// done forgets a call's pending output: its result carries the whole.
func (c *checkpoints) done(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, id)
}

// flush journals every call's pending output.
func (c *checkpoints) flush() {
	c.mu.Lock()
	pending := c.pending
	c.pending, c.timer = nil, nil
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return
	}
	for _, id := range slices.Sorted(maps.Keys(pending)) {
		// The chunks as they are: the journal writes them without a join.
		c.write(event.OutputCheckpoint{ID: id, Parts: pending[id]})
	}
}

// stop ends checkpointing (the session closes; a pending checkpoint is
// dropped: the call's result, or the settler, closes the card).
func (c *checkpoints) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.timer != nil {
		c.timer.Stop()
	}
}
