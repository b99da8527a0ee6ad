package changes

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// Defaults of Options.
const (
	// DefaultMaxKept is the largest file whose content is kept (and so
	// diffed and undoable): 1 MiB.
	DefaultMaxKept = 1 << 20
	// DefaultMaxFiles is the most files a tracked tree may hold.
	DefaultMaxFiles = 100_000
	// DefaultMaxFirst is what the first look of a tree keeps at most:
	// 256 MiB (a session opened on a home directory must not copy it).
	DefaultMaxFirst = 256 << 20
)

// Options configure a Tracker.
type Options struct {
	// Dir is the tree to track: the session's directory, absolute.
	// Tracker.SetRoots adds the session's additional directories.
	Dir string
	// Store keeps the contents (shared by the daemon's sessions).
	Store *Store
	// Open, when Store is nil, opens the store at the tracker's first look
	// instead of before: a session opened on it does not wait for the
	// store's directories, its packs' listing or its age sweep (the first
	// look runs after the reply that opened the session; see Prime). An
	// error it returns fails that look and every later one, as a tree that
	// cannot be looked at does (commands run untracked); the tracker calls
	// it again at each look until it succeeds, so it should remember its
	// answer (sync.OnceValues).
	Open func() (*Store, error)
	// Sink receives the FileChanges events (the session's sink: journal,
	// then presenter). It is called without the tracker's locks held.
	Sink event.Sink
	// MaxKept is the largest file whose content is read and kept
	// (DefaultMaxKept); larger files are tracked by size and times only.
	MaxKept int64
	// MaxFiles bounds the files of the tree (DefaultMaxFiles): a larger
	// tree is not tracked (ErrTooManyFiles).
	MaxFiles int
	// MaxFirst bounds the bytes the first look keeps (DefaultMaxFirst);
	// past them files are tracked by stat only, as large ones are, until a
	// command changes them.
	MaxFirst int64
	// Exclude are absolute paths never tracked (under Dir or an
	// additional directory). The state dir holding Store is always
	// excluded (journals and spill files change with every command when
	// it lies under a tracked tree).
	Exclude []string
	// Session is the session's id, under which the store records the
	// contents its tracker uses (see Store.Forget); "" records nothing.
	Session string
	// NoWatch looks at every file each time (with the stat cache), as
	// where inotify is missing; for tests and benchmarks.
	NoWatch bool
}

// Tracker tracks what commands do to the files of one session's directory
// and of its additional directories (SetRoots).
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

	mu      sync.Mutex                  // guards what follows; held during scans
	roots   []*root                     // the session's directory first, then its additional ones
	pending map[string]event.FileChange // changes seen while background tasks ran
	tasks   map[string]string           // running tracked task → its call
	early   map[string]bool             // tasks done before StartTask
	closed  bool

	wantMu  sync.Mutex // guards want and wantSet
	want    []string   // the additional directories SetRoots asked for
	wantSet bool       // want not taken up yet (syncRoots)

	// stopping makes a scan in progress end at once (Close need not wait
	// for the first look of a big tree).
	stopping atomic.Bool

	heldMu sync.Mutex
	held   map[string]event.FileChanges // by call: waiting for the call's ToolResult

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
	if opt.MaxFirst <= 0 {
		opt.MaxFirst = DefaultMaxFirst
	}
	if opt.Sink == nil {
		opt.Sink = event.SinkFunc(func(event.Event) {})
	}
	opt.Dir = filepath.Clean(opt.Dir)
	if opt.Store != nil {
		opt.Exclude = append(opt.Exclude, filepath.Dir(opt.Store.dir))
	}
	t := &Tracker{opt: opt, primed: make(chan struct{}),
		pending: map[string]event.FileChange{}, tasks: map[string]string{}, early: map[string]bool{},
		held: map[string]event.FileChanges{}, hist: history{known: map[string]int{}}}
	t.roots = []*root{t.newRoot(opt.Dir, false, opt.Exclude)}
	return t
}

// openStore opens the store through Options.Open, once it succeeds, and
// gives it to the roots made before. t.mu is held (every look takes it).
func (t *Tracker) openStore() error {
	if t.opt.Store != nil || t.opt.Open == nil {
		return nil
	}
	st, err := t.opt.Open()
	if err != nil {
		return fmt.Errorf("open the change store: %w", err)
	}
	t.opt.Store = st
	t.opt.Exclude = append(t.opt.Exclude, filepath.Dir(st.dir))
	for _, r := range t.roots {
		r.sc.store, r.sc.record = st, t.opt.Session != ""
		r.sc.excludePath(filepath.Dir(st.dir))
	}
	return nil
}

// SetSink sets Options.Sink, for a caller whose sink is built after the
// tracker (the session's fanout holds a presenter that holds the toolbox
// that holds the tracker). Call it before the first command.
func (t *Tracker) SetSink(s event.Sink) { t.opt.Sink = s }

// Dir is the session's directory, the first tracked one.
func (t *Tracker) Dir() string { return t.opt.Dir }

// Prime starts the first snapshot of every root in the background (once;
// later calls do nothing), so no prompt waits for it unless a command
// comes first.
func (t *Tracker) Prime() {
	t.primeOnce.Do(func() {
		go func() {
			defer close(t.primed)
			t.mu.Lock()
			defer t.mu.Unlock()
			_, _, _ = t.lookAll() // a failure is retried by the next Begin
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

// Begin notes the trees' state before a command: what changed since the
// last look is not the command's (the user's own edits), except while a
// tracked background task runs, whose changes it then is. It waits for the
// first snapshot. An error means no tree could be looked at and the
// command runs untracked; a tree that alone could not is left out of the
// command's changes.
func (t *Tracker) Begin(ctx context.Context) error {
	t.release()
	if err := t.Wait(ctx); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	return t.refresh()
}

// ErrClosed is returned by Begin after Close.
var ErrClosed = errors.New("change tracker closed")

// refresh looks at the trees; changes since the last look go to pending
// while tracked tasks run, else they are no one's. t.mu is held.
func (t *Tracker) refresh() error {
	cs, _, err := t.lookAll()
	if err != nil {
		return err
	}
	if len(t.tasks) > 0 {
		t.addPending(cs)
	}
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

// End finds what the command of call changed since its Begin and returns
// it as one FileChanges event (ID "changes-"+call); ok is false when
// nothing changed or the tree could not be looked at. The event is held
// until the call's ToolResult passes through Sink, and emitted right after
// it (or, failing that, before the next Begin, TaskDone or Undo).
func (t *Tracker) End(call string) (ev event.FileChanges, ok bool) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return event.FileChanges{}, false
	}
	files, _, _ := t.lookAll() // a tree without a look before the command finds nothing
	t.mu.Unlock()
	if len(files) == 0 {
		return event.FileChanges{}, false
	}
	ev = event.FileChanges{ID: "changes-" + call, Call: call, Dir: t.opt.Dir, Files: files}
	t.hist.record(ev)
	t.heldMu.Lock()
	t.held[call] = ev
	t.heldMu.Unlock()
	return ev, true
}

// take removes and returns the event held for call.
func (t *Tracker) take(call string) (event.FileChanges, bool) {
	t.heldMu.Lock()
	defer t.heldMu.Unlock()
	ev, ok := t.held[call]
	delete(t.held, call)
	return ev, ok
}

// release emits what is still held (a call whose ToolResult never came
// through Sink).
func (t *Tracker) release() {
	t.heldMu.Lock()
	var evs []event.FileChanges
	for call, ev := range t.held {
		evs = append(evs, ev)
		delete(t.held, call)
	}
	t.heldMu.Unlock()
	for _, ev := range evs {
		t.opt.Sink.Emit(ev)
	}
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
	t.release()
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
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

// Observe learns from the session's events, replayed (session/load): a
// UserPrompt starts a turn, a FileChanges is a change /undo may take back
// (or an undo that took some back). An event seen twice counts once. Live
// events go through Sink, which observes them the same way.
func (t *Tracker) Observe(ev event.Event) {
	switch e := ev.(type) {
	case event.UserPrompt:
		t.hist.newTurn()
	case event.FileChanges:
		t.hist.record(e)
	}
}

// Sink is the sink the session's live events go through (the agent's): it
// passes each to Options.Sink, observes it (Observe), and puts the
// FileChanges a call's End held right after that call's ToolResult — in
// the same batch, when the ToolResult comes in one — so the change card
// follows the command's card, in the journal and on the screen.
func (t *Tracker) Sink() event.BatchSink { return trackerSink{t} }

type trackerSink struct{ t *Tracker }

func (s trackerSink) Emit(ev event.Event) {
	s.t.Observe(ev)
	if r, ok := ev.(event.ToolResult); ok {
		if fc, ok := s.t.take(r.ID); ok {
			event.EmitAll(s.t.opt.Sink, ev, fc)
			return
		}
	}
	s.t.opt.Sink.Emit(ev)
}

func (s trackerSink) EmitBatch(evs []event.Event) {
	var out []event.Event // nil until a change is put in
	for i, ev := range evs {
		s.t.Observe(ev)
		var fc event.FileChanges
		held := false
		if r, ok := ev.(event.ToolResult); ok {
			fc, held = s.t.take(r.ID)
		}
		switch {
		case held && out == nil:
			out = append(append(make([]event.Event, 0, len(evs)+1), evs[:i+1]...), fc)
		case held:
			out = append(out, ev, fc)
		case out != nil:
			out = append(out, ev)
		}
	}
	if out == nil {
		out = evs
	}
	event.EmitAll(s.t.opt.Sink, out...)
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
	t.stopping.Store(true) // a look in progress ends: it holds mu
	t.mu.Lock()
	t.closed = true
	for _, r := range t.roots {
		r.close()
	}
	t.mu.Unlock()
	t.closeMu.Lock()
	fs := t.closers
	t.closers = nil
	t.closeMu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
