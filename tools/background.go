package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/event"
)

// bashOutput reads a background task's new output.
type bashOutput struct {
	ex     executor.Executor
	cfg    Config
	text   func() texts
	schema func() json.RawMessage
}

func (t *bashOutput) Name() string            { return BashOutputName }
func (t *bashOutput) Description() string     { return t.text().bashOutput }
func (t *bashOutput) Schema() json.RawMessage { return t.schema() }

// Run reads the output the task produced since the previous read, with a
// status line. It never blocks. An unknown task, or one owned by another
// session, is an IsError result carrying the executor's error text.
// Needs is nothing: a task's owner is checked by the executor, so a call
// can only read the session's own tasks.
func (t *bashOutput) Needs(args json.RawMessage) (Need, error) {
	if _, err := decodeTaskID(args); err != nil {
		return Need{}, err
	}
	return Need{Kind: NeedNothing}, nil
}

func (t *bashOutput) Run(_ context.Context, call Call) event.Result {
	id, err := decodeTaskID(call.Args)
	if err != nil {
		return errorResult(err)
	}
	rr, err := t.ex.Read(id, call.Session.ID)
	if err != nil {
		return taskErrorResult(id, err)
	}
	body := trimNewlines(CleanTerminalText(string(rr.Output)))
	status := taskStatusText(rr.Status, rr.ExitCode, rr.Signal)
	markers := func(cut bool) []string {
		var m []string
		switch {
		case rr.Lost > 0:
			m = append(m, withReason(fmt.Sprintf("[output truncated: %d bytes lost; %s]",
				rr.Lost, fullOutput(rr.SpillPath)), rr.SpillPath, rr.SpillError))
		case cut:
			m = append(m, truncationMarker(rr.SpillPath, rr.SpillError))
		}
		if rr.LimitHit != "" && rr.Status != executor.Running {
			m = append(m, limitMarker)
		}
		return append(m, "[status: "+status+"]")
	}
	if body == "" {
		body = "(no new output)"
	}
	text, cut := assemble(t.cfg.OutputLimit, body, "", markers)
	r := result{
		Result:  event.Result{Text: text},
		Outcome: Outcome{Truncated: cut || rr.Lost > 0, SpillPath: rr.SpillPath, SpillError: rr.SpillError},
	}
	r.setTask(id, rr.Status.String())
	setExit(&r, rr.Status, rr.ExitCode, rr.Signal)
	return r.event()
}

// bashKill stops a background task.
type bashKill struct {
	ex     executor.Executor
	text   func() texts
	schema func() json.RawMessage
}

func (t *bashKill) Name() string            { return BashKillName }
func (t *bashKill) Description() string     { return t.text().bashKill }
func (t *bashKill) Schema() json.RawMessage { return t.schema() }

// Run kills the task and waits (bounded by the executor's grace period) for
// it to die. Killing a finished task is a reported no-op; an unknown task or
// one owned by another session is an IsError result.
// Needs is nothing: only the session's own tasks can be killed.
func (t *bashKill) Needs(args json.RawMessage) (Need, error) {
	if _, err := decodeTaskID(args); err != nil {
		return Need{}, err
	}
	return Need{Kind: NeedNothing}, nil
}

func (t *bashKill) Run(ctx context.Context, call Call) event.Result {
	id, err := decodeTaskID(call.Args)
	if err != nil {
		return errorResult(err)
	}
	kr, err := t.ex.Kill(ctx, id, call.Session.ID)
	if err != nil {
		return taskErrorResult(id, err)
	}
	status := taskStatusText(kr.Status, kr.ExitCode, kr.Signal)
	text := fmt.Sprintf("Killed background task %s [status: %s].", id, status)
	if kr.AlreadyFinished {
		text = fmt.Sprintf("Background task %s had already finished [status: %s]; nothing to kill.", id, status)
	}
	r := result{Result: event.Result{Text: text}}
	r.setTask(id, kr.Status.String())
	setExit(&r, kr.Status, kr.ExitCode, kr.Signal)
	return r.event()
}

// taskErrorResult reports a failed Read or Kill. Ownership and unknown-id
// errors carry the executor's own text ("task bash-3 belongs to another
// session", "unknown task bash-9").
func taskErrorResult(id string, err error) event.Result {
	var owner *executor.OwnerError
	var unknown *executor.UnknownTaskError
	switch {
	case errors.As(err, &owner), errors.As(err, &unknown):
		return errorResult(err)
	case errors.Is(err, executor.ErrNotOwner):
		return errorResult(&executor.OwnerError{ID: id})
	case errors.Is(err, executor.ErrUnknownTask):
		return errorResult(&executor.UnknownTaskError{ID: id})
	}
	return errorResult(fmt.Errorf("task %s: %w", id, err))
}

// taskStatusText is a task's status as the model reads it:
// "running", "completed, exit code: N", "completed, killed by signal: S", "killed".
func taskStatusText(s executor.TaskStatus, exitCode int, signal string) string {
	switch {
	case s == executor.Completed && signal != "":
		return "completed, killed by signal: " + signal
	case s == executor.Completed:
		return fmt.Sprintf("completed, exit code: %d", exitCode)
	}
	return s.String()
}

// setExit records a finished task's exit in r's structured fields.
func setExit(r *result, s executor.TaskStatus, exitCode int, signal string) {
	if s == executor.Running {
		return
	}
	r.Signal = signal
	if signal == "" {
		r.ExitCode = &exitCode
	}
}

func orUnavailable(path string) string {
	if path == "" {
		return "(unavailable)"
	}
	return path
}
