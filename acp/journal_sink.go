package acp

import (
	"errors"
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/replay"
)

// journalSink records the events worth keeping; streaming-only events
// (deltas, live output) are left out: AssistantMessage and ToolResult carry
// their whole content.
//
// When the journal cannot write (a full disk), the user is told once, in
// the session, with the cause; the journal keeps the records and writes
// them with the next append that fits, and the user is told when saving
// resumed. Those notes go to the client only, never into the journal.
type journalSink struct {
	j    *replay.Journal
	log  *zap.Logger
	id   string
	tell event.Sink // the session's presenter

	mu      sync.Mutex
	failing bool // the user was told that records wait
}

func (js *journalSink) Emit(ev event.Event) {
	switch ev.(type) {
	case event.TextDelta, event.ThoughtDelta, event.ToolOutput:
		return
	}
	err := js.j.Append(ev)
	js.mu.Lock()
	defer js.mu.Unlock()
	switch {
	case err == nil && js.failing:
		js.failing = false
		js.log.Info("journal writes resumed", zap.String("session", js.id))
		js.tell.Emit(event.ErrorMessage{Text: "\n[dsh-acp: this session is being saved again; nothing was lost]\n"})
	case err == nil:
	case !js.failing:
		js.failing = true
		js.log.Error("journal append failed", zap.String("session", js.id), zap.Error(err))
		js.tell.Emit(event.ErrorMessage{Text: fmt.Sprintf("\n[dsh-acp: this session cannot be saved right now (%s). %s]\n", rootCause(err), keptNote(err))})
	default:
		js.log.Debug("journal append failed again", zap.String("session", js.id), zap.Error(err))
	}
}

// keptNote says what happens to the records that could not be written.
func keptNote(err error) string {
	if errors.Is(err, replay.ErrKept) {
		return "What happens is kept in memory and saved as soon as the disk has room."
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
