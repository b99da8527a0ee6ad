package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/local"
	"github.com/dsh-acp/dsh-acp/executor/sandbox"
	"github.com/dsh-acp/dsh-acp/internal/changes"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/eventually"
)

// eventLog is the session's sink in these tests: every event, in order.
type eventLog struct {
	mu  sync.Mutex
	evs []event.Event
}

func (l *eventLog) Emit(ev event.Event) {
	l.mu.Lock()
	l.evs = append(l.evs, ev)
	l.mu.Unlock()
}

func (l *eventLog) changes() []event.FileChanges {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []event.FileChanges
	for _, ev := range l.evs {
		if fc, ok := ev.(event.FileChanges); ok {
			out = append(out, fc)
		}
	}
	return out
}

// trackedSession is a session's bash tool over the real sandbox executor,
// tracked, with the agent's part (the ToolResult through the tracker's
// sink) played by call.
type trackedSession struct {
	t     *testing.T
	dir   string
	level executor.Level
	store *changes.Store
	tr    *changes.Tracker
	log   *eventLog
	tool  Tool
}

func newTrackedSession(t *testing.T, level executor.Level) *trackedSession {
	t.Helper()
	base := t.TempDir()
	dir, state, home := filepath.Join(base, "project"), filepath.Join(base, "state"), filepath.Join(base, "home")
	for _, d := range []string{dir, state, home} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	ex, err := sandbox.New(sandbox.Config{Config: local.Config{StateDir: state, Grace: 300 * time.Millisecond}, Home: home})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ex.Shutdown(context.Background()) })
	if level != executor.LevelOff && !slices.Contains(ex.Levels(), level) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and the sandbox offers no %s level here", level)
		}
		t.Skipf("bubblewrap is unusable here: no %s level", level)
	}
	store, err := changes.OpenStore(state, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	s := &trackedSession{t: t, dir: dir, level: level, store: store, log: &eventLog{}}
	s.tr = changes.NewTracker(changes.Options{Dir: dir, Store: store, Sink: s.log})
	t.Cleanup(s.tr.Close)
	s.tr.Prime()
	reg := Tracked(NewBash(ex, Config{}), s.tr)
	s.tool, _ = reg.Lookup(BashName)
	return s
}

// call runs one bash call as the agent does and returns its result.
func (s *trackedSession) call(id, command string, callLevel executor.Level, bg bool) event.Result {
	s.t.Helper()
	args, _ := json.Marshal(map[string]any{"command": command, "description": "test", "run_in_background": bg})
	res := s.tool.Run(context.Background(), Call{ID: id, Args: args, Level: callLevel,
		Session: Session{ID: "sess-1", Cwd: s.dir, Level: s.level}})
	s.tr.Sink().Emit(event.ToolResult{ID: id, Name: BashName, Args: args, Result: res})
	return res
}

func (s *trackedSession) write(rel, content string) {
	s.t.Helper()
	if err := os.WriteFile(filepath.Join(s.dir, rel), []byte(content), 0o644); err != nil {
		s.t.Fatal(err)
	}
}

func (s *trackedSession) text(h string) string {
	b, err := s.store.Get(h)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// A model bash call and a `!` command (the same tool) are tracked at every
// level that may write, their change right after their result; the result
// the model reads is as without tracking.
func TestTrackedBashWrites(t *testing.T) {
	for _, level := range []executor.Level{executor.LevelOff, executor.LevelWorkspace} {
		t.Run(string(level), func(t *testing.T) {
			s := newTrackedSession(t, level)
			s.write("notes.txt", "one\ntwo\n")
			res := s.call("call-1", "sed -i 's/two/TWO/' notes.txt", "", false)
			if res.Text != "(no output)" || res.IsError {
				t.Errorf("result %+v", res)
			}
			s.log.mu.Lock()
			n := len(s.log.evs)
			last2 := fmt.Sprintf("%T %T", s.log.evs[max(n-2, 0)], s.log.evs[n-1])
			s.log.mu.Unlock()
			if last2 != "event.ToolResult event.FileChanges" {
				t.Fatalf("events end with %s", last2)
			}
			cs := s.log.changes()
			c := cs[0].Files[0]
			if cs[0].ID != "changes-call-1" || c.Path != "notes.txt" || s.text(c.Old) != "one\ntwo\n" || s.text(c.New) != "one\nTWO\n" {
				t.Errorf("change %+v", cs[0])
			}
		})
	}
}

// A command at the read-only level — the session's, or the one the judge
// chose for a call — changes nothing and produces no change card.
func TestReadOnlyCommandsAreNotTracked(t *testing.T) {
	s := newTrackedSession(t, executor.LevelWorkspace)
	s.write("a.txt", "a\n")
	s.call("call-1", "cat a.txt; echo x > b.txt", executor.LevelReadOnly, false)
	if _, err := os.Stat(filepath.Join(s.dir, "b.txt")); err == nil {
		t.Fatal("a read-only command wrote a file")
	}
	// What changes while a read-only command runs is not its doing: an
	// untracked command has no card to put it on.
	go func() { time.Sleep(100 * time.Millisecond); s.write("c.txt", "written by the user meanwhile\n") }()
	s.call("call-2", "sleep 0.5", executor.LevelReadOnly, false)
	if cs := s.log.changes(); len(cs) != 0 {
		t.Fatalf("read-only commands produced change cards: %+v", cs)
	}
}

// A background task's changes come when it ends, as its own card.
func TestTrackedBackgroundTask(t *testing.T) {
	s := newTrackedSession(t, executor.LevelWorkspace)
	res := s.call("call-bg", "sleep 0.3; echo done > bg.txt", "", true)
	if !res.Running() {
		t.Fatalf("not started: %+v", res)
	}
	if cs := s.log.changes(); len(cs) != 0 {
		t.Fatalf("a change before the task ended: %+v", cs)
	}
	eventually.True(t, 10*time.Second, func() bool { return len(s.log.changes()) == 1 }, "no change card after the task ended")
	fc := s.log.changes()[0]
	if fc.ID != "changes-call-bg" || fc.Task != res.Task.ID || len(fc.Files) != 1 || fc.Files[0].Path != "bg.txt" || s.text(fc.Files[0].New) != "done\n" {
		t.Errorf("change %+v", fc)
	}
	if !strings.HasPrefix(fc.Task, "bash-") {
		t.Errorf("task %q", fc.Task)
	}
}
