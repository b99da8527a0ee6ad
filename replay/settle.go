package replay

import (
	"fmt"
	"strings"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// Texts of the synthetic results Settle gives calls that never got one, and
// the note a replay shows for background tasks of an earlier daemon.
const (
	// InterruptedText closes a call that started but has no result.
	InterruptedText = "interrupted: the daemon stopped while this command ran"
	// NotStartedText closes a call the model asked for (in an
	// AssistantMessage) that never started.
	NotStartedText = "interrupted: the daemon stopped before this command ran"
	// TurnEndedText and TurnEndedNotStartedText close calls left open by a
	// turn that ended (TurnEnd recorded) without their results.
	TurnEndedText           = "interrupted: the turn ended while this command ran"
	TurnEndedNotStartedText = "interrupted: the turn ended before this command ran"
	// GoneNote is what a replay shows for a background task that was still
	// running when last recorded (see Settler.RunningTasks).
	GoneNote = "this background task belonged to an earlier run of the daemon and is gone"
)

// Settler closes, on the fly, the tool calls of a recorded event stream that
// never got a result, so a replayed conversation is well formed (every tool
// call the model made has exactly one result) and no card stays "running".
//
// For each call still open when the next UserPrompt or TurnEnd arrives, or
// when Close is called, it emits a synthetic ToolResult (IsError, no exit
// code, the call's checkpointed output as its card output) just before
// that event: InterruptedText for a call that started (a ToolCall was
// recorded, and for a pending one its Decision), NotStartedText for a
// pending call still waiting for the user's answer, and a synthetic
// ToolCall followed by a result with NotStartedText for a call the model
// asked for in an AssistantMessage that never started (TurnEnded* texts
// when a TurnEnd closes the turn).
// A turn without a TurnEnd gets none added. Events are passed on as they
// arrive: a Settler buffers nothing but the open calls.
//
// A Settler is not safe for concurrent use.
type Settler struct {
	emit  func(event.Event) error
	open  []openCall
	tasks map[string]string // task id → last status seen
	order []string          // task ids in order of first appearance
}

type openCall struct {
	event.CallInfo
	opened  bool   // its card is open (a ToolCall was recorded)
	started bool   // it may have run: opened, and not waiting for the user
	output  []byte // checkpointed card output, shown by a synthetic result
}

// NewSettler returns a Settler that passes events to emit.
func NewSettler(emit func(event.Event) error) *Settler {
	return &Settler{emit: emit, tasks: map[string]string{}}
}

// Push passes ev on, preceded by the synthetic results it calls for. It
// returns emit's first error.
func (s *Settler) Push(ev event.Event) error {
	switch e := ev.(type) {
	case event.UserPrompt:
		if err := s.flush(InterruptedText, NotStartedText); err != nil {
			return err
		}
	case event.TurnEnd:
		if err := s.flush(TurnEndedText, TurnEndedNotStartedText); err != nil {
			return err
		}
	case event.AssistantMessage:
		for _, c := range e.ToolCalls {
			if s.find(c.ID) < 0 {
				s.open = append(s.open, openCall{CallInfo: c})
			}
		}
	case event.ToolCall:
		// A pending call waits for the user: it starts, if at all, after
		// its Decision.
		c := openCall{CallInfo: event.CallInfo{ID: e.ID, Name: e.Name, Args: e.Args}, opened: true, started: !e.Pending}
		if i := s.find(e.ID); i >= 0 {
			s.open[i] = c
		} else {
			s.open = append(s.open, c)
		}
	case event.Decision:
		if i := s.find(e.ID); i >= 0 && s.open[i].opened {
			s.open[i].started = true
		}
	case event.OutputCheckpoint:
		if i := s.find(e.ID); i >= 0 && len(s.open[i].output)+len(e.Data) <= event.MaxCardOutput {
			s.open[i].output = append(s.open[i].output, e.Data...)
		}
	case event.ToolResult:
		if i := s.find(e.ID); i >= 0 {
			s.open = append(s.open[:i], s.open[i+1:]...)
		}
		s.noteTask(e.Result)
	}
	return s.emit(ev)
}

// Close emits the synthetic results for the calls still open at the end of
// the stream.
func (s *Settler) Close() error {
	return s.flush(InterruptedText, NotStartedText)
}

// RunningTasks lists, in order of first appearance, the background tasks
// whose last recorded result said they were running: the tasks GoneNote is
// about.
func (s *Settler) RunningTasks() []string {
	var ids []string
	for _, id := range s.order {
		if s.tasks[id] == event.TaskRunning {
			ids = append(ids, id)
		}
	}
	return ids
}

func (s *Settler) noteTask(r event.Result) {
	if r.Task == nil || r.Task.ID == "" || r.Task.Status == "" {
		return
	}
	if _, seen := s.tasks[r.Task.ID]; !seen {
		s.order = append(s.order, r.Task.ID)
	}
	s.tasks[r.Task.ID] = r.Task.Status
}

func (s *Settler) find(id string) int {
	for i, c := range s.open {
		if c.ID == id {
			return i
		}
	}
	return -1
}

func (s *Settler) flush(startedText, notStartedText string) error {
	open := s.open
	s.open = nil
	for _, c := range open {
		text := startedText
		if !c.started {
			text = notStartedText
		}
		if !c.opened {
			if err := s.emit(event.ToolCall{ID: c.ID, Name: c.Name, Args: c.Args}); err != nil {
				return err
			}
		}
		res := event.ToolResult{ID: c.ID, Name: c.Name, Args: c.Args,
			Result: event.Result{Text: text, IsError: true, CardOutput: string(c.output)}}
		if err := s.emit(res); err != nil {
			return err
		}
	}
	return nil
}

// Settle returns events with every tool call that never got a result closed
// by a synthetic one, as a Settler does. events is not modified.
func Settle(events []event.Event) []event.Event {
	out := make([]event.Event, 0, len(events))
	s := NewSettler(func(ev event.Event) error {
		out = append(out, ev)
		return nil
	})
	for _, ev := range events {
		_ = s.Push(ev) // emit never fails
	}
	_ = s.Close()
	return out
}

// GoneTasksNote tells the user and the model that the background tasks ids
// (Settler.RunningTasks) of an earlier daemon run no longer exist; a
// reload shows it after the replayed session.
func GoneTasksNote(ids []string) string {
	return fmt.Sprintf("\n[background task %s: %s]\n", strings.Join(ids, ", "), GoneNote)
}
