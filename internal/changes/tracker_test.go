package changes

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// collector is a sink that keeps the events.
type collector struct {
	mu  sync.Mutex
	evs []event.FileChanges
}

func (c *collector) EmitBatch(evs []event.Event) {
	for _, ev := range evs {
		c.Emit(ev)
	}
}

func (c *collector) Emit(ev event.Event) {
	if fc, ok := ev.(event.FileChanges); ok {
		c.mu.Lock()
		c.evs = append(c.evs, fc)
		c.mu.Unlock()
	}
}

func (c *collector) all() []event.FileChanges {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]event.FileChanges(nil), c.evs...)
}

type fixture struct {
	t     *testing.T
	dir   string
	store *Store
	tr    *Tracker
	sink  *collector
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "project")
	state := filepath.Join(base, "state")
	for _, d := range []string{dir, state} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(state, 0o700)
	st, err := OpenStore(state, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{t: t, dir: dir, store: st, sink: &collector{}}
	f.tr = NewTracker(Options{Dir: dir, Store: st, Sink: f.sink})
	t.Cleanup(f.tr.Close)
	return f
}

func (f *fixture) write(rel, content string) {
	f.t.Helper()
	p := filepath.Join(f.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) read(rel string) string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, rel))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// run runs command with bash in the tree, tracked as call id.
func (f *fixture) run(id, command string) (event.FileChanges, bool) {
	f.t.Helper()
	if err := f.tr.Begin(context.Background()); err != nil {
		f.t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", command)
	cmd.Dir = f.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		f.t.Fatalf("%s: %v\n%s", command, err, out)
	}
	ev, ok := f.tr.End(id)
	f.tr.Sink().Emit(event.ToolResult{ID: id}) // what the agent does next: the held change follows
	return ev, ok
}

func (f *fixture) text(hash string) string {
	f.t.Helper()
	if hash == "" {
		return "<none>"
	}
	b, err := f.store.Get(hash)
	if err != nil {
		f.t.Fatalf("get %s: %v", hash, err)
	}
	return string(b)
}

func summary(ev event.FileChanges) string {
	var parts []string
	for _, c := range ev.Files {
		parts = append(parts, c.Op+" "+c.Path)
	}
	return strings.Join(parts, ", ")
}

// Each kind of command that writes is seen with the right paths and texts.
func TestCommandsThatWrite(t *testing.T) {
	for _, watch := range []bool{true, false} {
		name := "watching"
		if !watch {
			name = "looking at every file"
		}
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.write("notes.txt", "one\ntwo\nthree\n")
			f.write("src/a.go", "package a\n")
			f.write("old.txt", "old\n")
			if !watch {
				f.tr.roots[0].sc.noWatch = true
			}
			cases := []struct {
				command, want string
				check         func(ev event.FileChanges)
			}{
				{"sed -i 's/two/TWO/' notes.txt", "modified notes.txt", func(ev event.FileChanges) {
					c := ev.Files[0]
					if f.text(c.Old) != "one\ntwo\nthree\n" || f.text(c.New) != "one\nTWO\nthree\n" || c.Line != 2 {
						t.Errorf("sed: old %q new %q line %d", f.text(c.Old), f.text(c.New), c.Line)
					}
				}},
				{"cat > src/a.go <<'EOF'\npackage a\n\nfunc A() {}\nEOF", "modified src/a.go", func(ev event.FileChanges) {
					if c := ev.Files[0]; f.text(c.New) != "package a\n\nfunc A() {}\n" || c.Line != 2 {
						t.Errorf("heredoc: new %q line %d", f.text(c.New), c.Line)
					}
				}},
				{"rm old.txt", "deleted old.txt", func(ev event.FileChanges) {
					if c := ev.Files[0]; f.text(c.Old) != "old\n" || c.New != "" {
						t.Errorf("rm: %+v", c)
					}
				}},
				{"mv notes.txt moved.txt", "created moved.txt, deleted notes.txt", nil},
				{"mkdir -p new/deep && echo hi > new/deep/x.txt", "created new/deep/x.txt", func(ev event.FileChanges) {
					if c := ev.Files[0]; c.Old != "" || f.text(c.New) != "hi\n" || c.Line != 1 {
						t.Errorf("create: %+v", c)
					}
				}},
				{"rm -r new", "deleted new/deep/x.txt", nil},
				{"cat moved.txt >/dev/null; ls -R >/dev/null", "", nil},
			}
			for i, c := range cases {
				id := "call-" + string(rune('a'+i))
				ev, ok := f.run(id, c.command)
				if got := summary(ev); got != c.want || ok != (c.want != "") {
					t.Fatalf("%s: got %q (emitted %v), want %q", c.command, got, ok, c.want)
				}
				if !ok {
					continue
				}
				if ev.ID != "changes-"+id || ev.Call != id || ev.Dir != f.dir {
					t.Errorf("%s: event %+v", c.command, ev)
				}
				if c.check != nil {
					c.check(ev)
				}
			}
			if n := len(f.sink.all()); n != 6 {
				t.Errorf("%d events emitted, want 6", n)
			}
		})
	}
}

// What the repository ignores, and .git itself, is not tracked; a file the
// user changed between commands is not the next command's change.
func TestIgnoredAndUserEdits(t *testing.T) {
	f := newFixture(t)
	f.write(".gitignore", "build/\n*.log\n!keep.log\n")
	f.write("sub/.gitignore", "local.txt\n")
	f.write("a.txt", "a\n")
	if err := os.MkdirAll(filepath.Join(f.dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	ev, _ := f.run("c1", "mkdir -p build sub && echo x > build/out && echo x > run.log && echo k > keep.log && echo l > sub/local.txt && echo s > sub/s.txt && echo g > .git/HEAD")
	if got := summary(ev); got != "created keep.log, created sub/s.txt" {
		t.Errorf("got %q", got)
	}
	f.write("a.txt", "edited by the user\n")
	if ev, ok := f.run("c2", "true"); ok {
		t.Errorf("the user's edit was taken for the command's: %s", summary(ev))
	}
}

// A file whose stat is unchanged is not read again.
func TestStatCacheSparesReads(t *testing.T) {
	f := newFixture(t)
	f.tr.roots[0].sc.noWatch = true
	for i := 0; i < 50; i++ {
		f.write(filepath.Join("d", string(rune('a'+i%26))+strings.Repeat("x", i/26)+".txt"), "content\n")
	}
	if err := f.tr.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * racySlack)
	f.run("warm", "true") // reads again what was racy at the first look
	before := f.tr.roots[0].sc.reads
	f.run("c", "echo changed > d/a.txt")
	if got := f.tr.roots[0].sc.reads - before; got != 1 {
		t.Errorf("a command that changed one file of 50 read %d files, want 1", got)
	}
}

// A binary file is marked binary; one over the keep limit is large (its
// content not kept, so not undoable).
func TestBinaryAndLarge(t *testing.T) {
	f := newFixture(t)
	f.tr.Close()
	f.tr = NewTracker(Options{Dir: f.dir, Store: f.store, Sink: f.sink, MaxKept: 1000})
	defer f.tr.Close()
	ev, _ := f.run("c1", "printf 'a\\0b' > bin.dat && head -c 5000 /dev/zero | tr '\\0' x > big.txt && echo t > t.txt")
	if got := summary(ev); got != "created big.txt, created bin.dat, created t.txt" {
		t.Fatalf("got %q", got)
	}
	big, bin, txt := ev.Files[0], ev.Files[1], ev.Files[2]
	if !big.Large || big.New != "" || big.NewSize != 5000 {
		t.Errorf("big: %+v", big)
	}
	if !bin.Binary || bin.New == "" || bin.NewSize != 3 {
		t.Errorf("bin: %+v", bin)
	}
	if txt.Binary || txt.Large {
		t.Errorf("text: %+v", txt)
	}
	f.run("c2", "echo more >> big.txt")
	reply := f.tr.Undo(context.Background(), "")
	if !strings.Contains(reply, "big.txt is too large to have been kept; not undone") {
		t.Errorf("reply %q", reply)
	}
}

func TestFirstChangedLine(t *testing.T) {
	for _, c := range []struct {
		old, new string
		want     int
	}{
		{"", "a\n", 1},
		{"a\nb\nc\n", "a\nB\nc\n", 2},
		{"a\nb\nc\n", "a\nb\n", 2},
		{"a\nb\n", "a\nb\nc\n", 3},
		{"a\nb", "a\nbc", 2},
	} {
		if got := FirstChangedLine([]byte(c.old), []byte(c.new)); got != c.want {
			t.Errorf("%q → %q: line %d, want %d", c.old, c.new, got, c.want)
		}
	}
}

// The change follows its call's ToolResult, inside the same batch; a
// change whose ToolResult never came is emitted before the next command.
func TestSinkPutsTheChangeAfterItsResult(t *testing.T) {
	f := newFixture(t)
	var got []string
	rec := event.SinkFunc(func(ev event.Event) { got = append(got, fmt.Sprintf("%T", ev)) })
	f.tr.Close()
	f.tr = NewTracker(Options{Dir: f.dir, Store: f.store, Sink: batchRecorder{rec, &got}})
	defer f.tr.Close()
	ctx := context.Background()
	f.tr.Begin(ctx)
	f.write("a.txt", "a")
	f.tr.End("c1")
	f.tr.Sink().EmitBatch([]event.Event{event.ToolResult{ID: "c1"}, event.TurnEnd{}})
	if want := "batch[event.ToolResult event.FileChanges event.TurnEnd]"; strings.Join(got, " ") != want {
		t.Errorf("got %q, want %q", got, want)
	}
	got = nil
	f.tr.Begin(ctx)
	f.write("b.txt", "b")
	f.tr.End("c2")
	f.tr.Begin(ctx)
	if want := "event.FileChanges"; strings.Join(got, " ") != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

type batchRecorder struct {
	event.SinkFunc
	got *[]string
}

func (b batchRecorder) EmitBatch(evs []event.Event) {
	var names []string
	for _, ev := range evs {
		names = append(names, fmt.Sprintf("%T", ev))
	}
	*b.got = append(*b.got, "batch["+strings.Join(names, " ")+"]")
}

// Tracking needs no git binary: with nothing on PATH, a repository's
// ignore rules still apply.
func TestNoGitOnPath(t *testing.T) {
	f := newFixture(t)
	if err := os.MkdirAll(filepath.Join(f.dir, ".git", "info"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.write(".git/info/exclude", "secret.txt\n")
	f.write(".gitignore", "*.tmp\n")
	t.Setenv("PATH", t.TempDir())
	ctx := context.Background()
	if err := f.tr.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	f.write("a.tmp", "x")
	f.write("secret.txt", "x")
	f.write("kept.go", "x")
	ev, _ := f.tr.End("c1")
	if got := summary(ev); got != "created kept.go" {
		t.Errorf("got %q", got)
	}
}

// The session directory below a repository's root gets the rules of the
// .gitignore files above it.
func TestRulesAboveTheDirectory(t *testing.T) {
	base := t.TempDir()
	repo := filepath.Join(base, "repo")
	dir := filepath.Join(repo, "sub", "project")
	if err := os.MkdirAll(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(repo, ".gitignore"), []byte("*.log\nsub/project/gen/\n"), 0o644)
	state := filepath.Join(base, "state")
	os.Mkdir(state, 0o700)
	st, err := OpenStore(state, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tr := NewTracker(Options{Dir: dir, Store: st})
	defer tr.Close()
	if err := tr.Begin(context.Background()); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "gen"), 0o755)
	for _, n := range []string{"x.log", "gen/y.go", "z.go"} {
		os.WriteFile(filepath.Join(dir, n), []byte("1"), 0o644)
	}
	ev, _ := tr.End("c")
	if got := summary(ev); got != "created z.go" {
		t.Errorf("got %q", got)
	}
}

// A state dir inside the tracked directory is not tracked: its journals
// change with every command.
func TestStateDirInsideIsExcluded(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, ".dsh-state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := OpenStore(state, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tr := NewTracker(Options{Dir: dir, Store: st})
	defer tr.Close()
	if err := tr.Begin(context.Background()); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(state, "journal.jsonl"), []byte("{}\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	ev, _ := tr.End("c")
	if got := summary(ev); got != "created a.txt" {
		t.Errorf("got %q", got)
	}
}

// A tracker given Options.Open opens the store at its first look, not when
// it is made (a session's reply does not wait for the store); a failed
// open fails the look (the command runs untracked) and is tried again at
// the next; the store's state dir inside the tree stays excluded, and the
// contents go to the store opened late.
func TestStoreOpenedAtTheFirstLook(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, ".dsh-state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	opens, fail := 0, true
	var st *Store
	tr := NewTracker(Options{Dir: dir, Session: "s1", Open: func() (*Store, error) {
		opens++
		if fail {
			return nil, fmt.Errorf("planted failure")
		}
		var err error
		st, err = OpenStore(state, 0)
		return st, err
	}})
	defer tr.Close()
	defer func() {
		if st != nil {
			st.Close()
		}
	}()
	if _, err := os.Stat(filepath.Join(state, StoreDir)); opens != 0 || err == nil {
		t.Fatalf("NewTracker opened the store (%d opens, store dir there: %v)", opens, err == nil)
	}
	if err := tr.Begin(context.Background()); err == nil || !strings.Contains(err.Error(), "planted failure") {
		t.Fatalf("Begin with a store that cannot open: %v, want the open's error", err)
	}
	fail = false
	if err := tr.Begin(context.Background()); err != nil {
		t.Fatalf("Begin once the store opens: %v", err)
	}
	os.WriteFile(filepath.Join(state, "journal.jsonl"), []byte("{}\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("late"), 0o644)
	ev, _ := tr.End("c")
	if got := summary(ev); got != "created a.txt" || len(ev.Files) != 1 {
		t.Fatalf("got %q", got)
	}
	if b, err := st.Get(ev.Files[0].New); err != nil || string(b) != "late" {
		t.Errorf("the content in the store opened late: %q, %v", b, err)
	}
	before := opens
	if _, ok := (&fixture{t: t, dir: dir, tr: tr}).run("c2", "echo again > a.txt"); !ok || opens != before {
		t.Errorf("a later command: change %v, %d more opens (want a change and none: the store stays open)", ok, opens-before)
	}
}
