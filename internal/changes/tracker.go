package changes

import (
	"context"
	"path/filepath"
	"sync"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// Defaults of Options.
const (
	// DefaultMaxKept is the largest file whose content is kept (and so
	// diffed and undoable): 1 MiB.
	DefaultMaxKept = 1 << 20
	// DefaultMaxFiles is the most files a tracked tree may hold.
	DefaultMaxFiles = 100_000
)

// Options configure a Tracker.
type Options struct {
	// Dir is the tree to track: the session's directory, absolute.
	Dir string
	// Store keeps the contents (shared by the daemon's sessions).
	Store *Store
	// Sink receives the FileChanges events (the session's sink: journal,
	// then presenter). It is called without the tracker's locks held.
	Sink event.Sink
	// MaxKept is the largest file whose content is read and kept
	// (DefaultMaxKept); larger files are tracked by size and times only.
	MaxKept int64
	// MaxFiles bounds the files of the tree (DefaultMaxFiles): a larger
	// tree is not tracked (ErrTooManyFiles).
	MaxFiles int
	// Exclude are absolute paths under Dir never tracked (the state dir,
	// when it lies under Dir).
	Exclude []string
}

// Tracker tracks what commands do to the files of one session's directory.
// A tracked command is Begin, the command, then End (or StartTask and,
// later, TaskDone for a background task); End emits one FileChanges event
// when files changed. Undo takes changes back. The tracker also learns the
// session's changes and turns from the events it Emits and is given on
// replay (Emit), so /undo works the same after a reload. Safe for
// concurrent use; scans run one at a time.
type Tracker struct {
	opt Options

	primeOnce sync.Once
	primed    chan struct{} // closed when the first snapshot is done

	mu      sync.Mutex // guards what follows; held during scans
	sc      *scanner
	base    *Snapshot                   // the tree as last seen
	pending map[string]event.FileChange // changes seen while background tasks ran
	tasks   map[string]string           // running tracked task → its call
	early   map[string]bool             // tasks done before StartTask

	hist history

	closeMu sync.Mutex
	closers []func()
}

// NewTracker returns a tracker of opt.Dir. It takes no snapshot yet: Prime
// starts the first in the background, and the first Begin waits for it.
func NewTracker(opt Options) *Tracker {
	if opt.MaxKept <= 0 {
		opt.MaxKept = DefaultMaxKept
	}
	if opt.MaxFiles <= 0 {
		opt.MaxFiles = DefaultMaxFiles
	}
	if opt.Sink == nil {
		opt.Sink = event.SinkFunc(func(event.Event) {})
	}
	opt.Dir = filepath.Clean(opt.Dir)
	sc := &scanner{root: opt.Dir, store: opt.Store, maxKept: opt.MaxKept, maxFiles: opt.MaxFiles,
		ignore: newIgnorer(opt.Dir), exclude: map[string]bool{}}
	for _, x := range opt.Exclude {
		if rel, err := filepath.Rel(opt.Dir, x); err == nil && rel != "." && filepath.IsLocal(rel) {
			sc.exclude[filepath.ToSlash(rel)] = true
		}
	}
	return &Tracker{opt: opt, primed: make(chan struct{}), sc: sc,
		pending: map[string]event.FileChange{}, tasks: map[string]string{}, early: map[string]bool{},
		hist: history{known: map[string]int{}}}
}

// Dir is the tracked directory.
func (t *Tracker) Dir() string { return t.opt.Dir }

// Prime starts the first snapshot in the background (once; later calls do
// nothing), so no prompt waits for it unless a command comes first.
func (t *Tracker) Prime() {
	t.primeOnce.Do(func() {
		go func() {
			defer close(t.primed)
			t.mu.Lock()
			defer t.mu.Unlock()
			t.base, _, _ = t.sc.look(nil) // a failure is retried by the next Begin
		}()
	})
}

// Wait waits for the first snapshot (starting it if Prime was not called).
func (t *Tracker) Wait(ctx context.Context) error {
	t.Prime()
	select {
	case <-t.primed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Begin notes the tree's state before a command: what changed since the
// last look is not the command's (the user's own edits), except while a
// tracked background task runs, whose changes it then is. It waits for the
// first snapshot. An error means the command runs untracked.
func (t *Tracker) Begin(ctx context.Context) error {
	if err := t.Wait(ctx); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.refresh()
}

// refresh looks at the tree; changes since the last look go to pending
// while tracked tasks run, else they are no one's. t.mu is held.
func (t *Tracker) refresh() error {
	s, cs, err := t.sc.look(t.base)
	if err != nil {
		return err
	}
	if len(t.tasks) > 0 {
		t.addPending(cs)
	}
	t.base = s
	return nil
}

func (t *Tracker) addPending(cs []event.FileChange) {
	for _, c := range cs {
		if a, ok := t.pending[c.Path]; ok {
			if m := compose(a, c); m != nil {
				t.pending[c.Path] = *m
			} else {
				delete(t.pending, c.Path)
			}
			continue
		}
		t.pending[c.Path] = c
	}
}

// End finds what the command of call changed since its Begin and emits it
// as one FileChanges event (ID "changes-"+call), which it returns; ok is
// false when nothing changed (nothing is emitted) or the tree could not be
// scanned.
func (t *Tracker) End(call string) (ev event.FileChanges, ok bool) {
	t.mu.Lock()
	first := t.base == nil
	s, files, err := t.sc.look(t.base)
	if err == nil {
		t.base = s
	}
	if first {
		files = nil // no look before the command: nothing to compare with
	}
	t.mu.Unlock()
	if len(files) == 0 {
		return event.FileChanges{}, false
	}
	ev = event.FileChanges{ID: "changes-" + call, Call: call, Dir: t.opt.Dir, Files: files}
	t.emit(ev)
	return ev, true
}

// StartTask says that the command of call, begun with Begin, is now the
// background task task: what changes until it ends is its, emitted by
// TaskDone.
func (t *Tracker) StartTask(task, call string) {
	t.mu.Lock()
	t.tasks[task] = call
	done := t.early[task]
	delete(t.early, task)
	t.mu.Unlock()
	if done {
		t.TaskDone(task)
	}
}

// TaskDone says that background task task ended: what changed since the
// last look (and what was set aside while it ran) is emitted as its
// FileChanges (ID "changes-" and the call that started it). A task done
// before its StartTask is remembered; call it for this session's tasks
// only. It scans, so it must not run on a goroutine that may not block.
func (t *Tracker) TaskDone(task string) {
	t.mu.Lock()
	call, ok := t.tasks[task]
	if !ok {
		t.early[task] = true
		t.mu.Unlock()
		return
	}
	_ = t.refresh()
	delete(t.tasks, task)
	files := make([]event.FileChange, 0, len(t.pending))
	for _, c := range t.pending {
		files = append(files, c)
	}
	t.pending = map[string]event.FileChange{}
	t.mu.Unlock()
	if len(files) == 0 {
		return
	}
	files = merge(t.opt.Store, nil, files)
	t.emit(event.FileChanges{ID: "changes-" + call, Call: call, Task: task, Dir: t.opt.Dir, Files: files})
}

// emit records ev and gives it to the sink.
func (t *Tracker) emit(ev event.FileChanges) {
	t.hist.record(ev)
	t.opt.Sink.Emit(ev)
}

// Emit observes the session's events, live or replayed: a UserPrompt
// starts a turn, a FileChanges is a change /undo may take back (or an undo
// that took some back). An event seen twice counts once.
func (t *Tracker) Emit(ev event.Event) {
	switch e := ev.(type) {
	case event.UserPrompt:
		t.hist.newTurn()
	case event.FileChanges:
		t.hist.record(e)
	}
}

// Defer registers f to run at Close (a subscription to end).
func (t *Tracker) Defer(f func()) {
	t.closeMu.Lock()
	t.closers = append(t.closers, f)
	t.closeMu.Unlock()
}

// Close runs what was deferred and stops watching the tree. The tracker
// is not used after.
func (t *Tracker) Close() {
	t.mu.Lock()
	t.sc.w.close()
	t.sc.w, t.sc.noWatch = nil, true
	t.mu.Unlock()
	t.closeMu.Lock()
	fs := t.closers
	t.closers = nil
	t.closeMu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
