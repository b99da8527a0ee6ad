package tools

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/changes"
	"github.com/dsh-acp/dsh-acp/internal/event"
)

// Tracked returns a registry holding r's tools, with the bash tool (the
// model's calls and the user's `!` commands alike) wrapped so that every
// command that may write is tracked by tr: tr.Begin before it, tr.End
// after it (its FileChanges then follows the call's ToolResult through
// tr.Sink), or for a background task tr.StartTask and, when the task ends
// or is killed, tr.TaskDone. A command at executor.LevelReadOnly (the
// session's level, or the one the permission step chose for a call it
// found read-only) is not tracked: it cannot write. When tr cannot look
// at the directory the command runs untracked. The result the model reads
// is unchanged. r is unchanged; a registry without the bash tools of
// NewBash is returned as a copy.
func Tracked(r *Registry, tr *changes.Tracker) *Registry {
	out := NewRegistry()
	for _, t := range r.All() {
		if b, ok := t.(*bash); ok {
			t = &trackedBash{bash: b, tr: tr}
		}
		if err := out.Register(t); err != nil {
			panic(err) // unreachable: r's names are distinct
		}
	}
	return out
}

// trackedBash is the bash tool with change tracking around each run.
type trackedBash struct {
	*bash
	tr    *changes.Tracker
	watch sync.Once
}

// Run runs the call as bash does, tracked unless it runs read-only.
func (t *trackedBash) Run(ctx context.Context, call Call) event.Result {
	if t.callLevel(call) == executor.LevelReadOnly {
		return t.bash.Run(ctx, call)
	}
	if background(call.Args) {
		t.watchTasks(call.Session.ID)
	}
	if err := t.tr.Begin(ctx); err != nil {
		return t.bash.Run(ctx, call)
	}
	res := t.bash.Run(ctx, call)
	if res.Running() {
		t.tr.StartTask(res.Task.ID, call.ID)
		return res
	}
	t.tr.End(call.ID)
	return res
}

// callLevel is the level call's command runs at: the call's, else the
// session's, else the executor's default.
func (t *trackedBash) callLevel(call Call) executor.Level {
	if call.Level != "" {
		return call.Level
	}
	return t.level(call.Session.Level)
}

// watchTasks subscribes (once) to the executor's task ends, passing those
// of the session owner on to the tracker, off the executor's goroutine
// (a look may read files). The subscription ends when the tracker closes.
func (t *trackedBash) watchTasks(owner string) {
	t.watch.Do(func() {
		unsubscribe := t.ex.OnTaskDone(func(d executor.TaskDone) {
			if d.Owner == owner {
				go t.tr.TaskDone(d.ID)
			}
		})
		t.tr.Defer(unsubscribe)
	})
}

// background reports whether a bash call's arguments ask for a
// background task.
func background(args json.RawMessage) bool {
	a, err := decodeBashArgs(args)
	return err == nil && a.RunInBackground
}
