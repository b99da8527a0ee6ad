package replay

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestModes(t *testing.T) {
	s, state := newTestStore(t)
	dir := filepath.Join(state, "sessions")
	if s.Dir() != dir || mode(t, dir) != 0o700 {
		t.Errorf("sessions dir %s mode %v", s.Dir(), mode(t, dir))
	}
	j := mustCreate(t, s, "s1", "/w")
	j.Close()
	path := filepath.Join(dir, "s1.jsonl")
	if m := mode(t, path); m != 0o600 {
		t.Errorf("journal mode %v, want 0600", m)
	}

	// Repair: loose modes are tightened on open.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	s2, err := OpenStore(state)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if m := mode(t, dir); m != 0o700 {
		t.Errorf("sessions dir mode after repair %v", m)
	}
	j2, err := s2.OpenAppend("s1")
	if err != nil {
		t.Fatal(err)
	}
	j2.Close()
	if m := mode(t, path); m != 0o600 {
		t.Errorf("journal mode after repair %v", m)
	}
}

func TestHostileSessionsDir(t *testing.T) {
	tests := []struct {
		name  string
		plant func(t *testing.T, sessions string)
	}{
		{"symlink to a directory", func(t *testing.T, sessions string) {
			if err := os.Symlink(t.TempDir(), sessions); err != nil {
				t.Fatal(err)
			}
		}},
		{"regular file", func(t *testing.T, sessions string) {
			if err := os.WriteFile(sessions, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"world-writable directory", func(t *testing.T, sessions string) {
			if err := os.Mkdir(sessions, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(sessions, 0o777); err != nil {
				t.Fatal(err)
			}
		}},
		{"group-writable directory", func(t *testing.T, sessions string) {
			if err := os.Mkdir(sessions, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(sessions, 0o770); err != nil {
				t.Fatal(err)
			}
		}},
		{"another user's directory", func(t *testing.T, sessions string) {
			if err := os.Mkdir(sessions, 0o700); err != nil {
				t.Fatal(err)
			}
			if os.Geteuid() == 0 {
				if err := os.Chown(sessions, 65534, 65534); err != nil {
					t.Fatal(err)
				}
				return
			}
			// Unprivileged: stand in a root-owned directory instead.
			if err := os.Remove(sessions); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/", sessions); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := t.TempDir()
			tt.plant(t, filepath.Join(state, "sessions"))
			s, err := OpenStore(state)
			if !errors.Is(err, ErrUnsafe) {
				if s != nil {
					s.Close()
				}
				t.Fatalf("OpenStore = %v, want ErrUnsafe", err)
			}
		})
	}
	if err := checkOwner(mustLstat(t, "/")); os.Geteuid() != 0 && !errors.Is(err, ErrUnsafe) {
		t.Errorf("checkOwner(/) = %v for uid %d", err, os.Geteuid())
	}
}

func mustLstat(t *testing.T, p string) fs.FileInfo {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

func TestHostileJournalFile(t *testing.T) {
	s, state := newTestStore(t)
	dir := filepath.Join(state, "sessions")
	j := mustCreate(t, s, "real", "/w")
	j.Close()
	if err := os.Symlink("real.jsonl", filepath.Join(dir, "link.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "dir.jsonl"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"link", "dir"} {
		if _, err := s.OpenAppend(id); !errors.Is(err, ErrUnsafe) {
			t.Errorf("OpenAppend(%s) = %v, want ErrUnsafe", id, err)
		}
		if _, err := s.Load(id); !errors.Is(err, ErrUnsafe) {
			t.Errorf("Load(%s) = %v, want ErrUnsafe", id, err)
		}
	}
	if _, err := s.Create("real", "/w", "v"); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create over an existing journal = %v", err)
	}
	if _, err := s.Create("link", "/w", "v"); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create over a symlink = %v", err)
	}
	if _, err := s.OpenAppend("missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenAppend(missing) = %v", err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(filepath.Join(dir, "real.jsonl"), 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := s.OpenAppend("real"); !errors.Is(err, ErrUnsafe) {
			t.Errorf("OpenAppend of another user's journal = %v", err)
		}
	}
}

func TestIDs(t *testing.T) {
	bad := []string{"", ".", "..", "../x", "a/b", "/abs", `a\b`, ".hidden", "-x", "a b", "a\x00b", "é", strings.Repeat("a", 129)}
	for _, id := range bad {
		if err := ValidID(id); !errors.Is(err, ErrBadID) {
			t.Errorf("ValidID(%q) = %v", id, err)
		}
	}
	good := []string{"a", "s1", "A.b_c-d", "20260501T120304.123456Z-9f86d081884c7d65", strings.Repeat("a", 128)}
	for _, id := range good {
		if err := ValidID(id); err != nil {
			t.Errorf("ValidID(%q) = %v", id, err)
		}
	}

	s, state := newTestStore(t)
	for _, id := range []string{"../x", "../../etc/passwd", "a/b", ""} {
		if _, err := s.Create(id, "/w", "v"); !errors.Is(err, ErrBadID) {
			t.Errorf("Create(%q) = %v", id, err)
		}
		if _, err := s.OpenAppend(id); !errors.Is(err, ErrBadID) {
			t.Errorf("OpenAppend(%q) = %v", id, err)
		}
		if _, err := s.Load(id); !errors.Is(err, ErrBadID) {
			t.Errorf("Load(%q) = %v", id, err)
		}
	}
	if _, err := os.Stat(filepath.Join(state, "x.jsonl")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a journal escaped the sessions directory: %v", err)
	}

	seen := map[string]bool{}
	prev := ""
	for range 1000 {
		id := NewSessionID()
		if err := ValidID(id); err != nil || seen[id] {
			t.Fatalf("NewSessionID() = %q: valid %v, seen %v", id, err, seen[id])
		}
		seen[id] = true
		if prev != "" && id[:23] < prev[:23] {
			t.Fatalf("ids do not sort by time: %q after %q", id, prev)
		}
		prev = id
	}
	c := newClock()
	a, b := newSessionID(c.now()), newSessionID(c.now())
	if !(a < b) {
		t.Errorf("ids of later times sort earlier: %q, %q", a, b)
	}
}

func TestTornLastLine(t *testing.T) {
	tests := []struct {
		name string
		tail string
	}{
		{"half a record", `{"v":1,"seq":4,"t":"2026-05-01T12:03:04.004Z","type":"notice","te`},
		{"NUL run", strings.Repeat("\x00", 4096)},
		{"record then NULs", `{"v":1,"seq":4,"type":"notice"` + strings.Repeat("\x00", 100)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newTestStore(t)
			j := mustCreate(t, s, "s1", "/w")
			mustAppend(t, j, event.UserPrompt{Text: "one"}, event.TurnEnd{StopReason: event.EndTurn})
			j.Close()
			path, _ := s.Path("s1")
			before := mustLstat(t, path).Size()
			appendFile(t, path, tt.tail)

			l, err := s.Load("s1")
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Events) != 2 || len(l.Warnings) == 0 {
				t.Errorf("before repair: events %#v, warnings %q", l.Events, l.Warnings)
			}

			j, err = s.OpenAppend("s1")
			if err != nil {
				t.Fatal(err)
			}
			if j.Repaired() != int64(len(tt.tail)) || mustLstat(t, path).Size() != before {
				t.Errorf("repaired %d bytes, size %d, want %d and %d", j.Repaired(), mustLstat(t, path).Size(), len(tt.tail), before)
			}
			mustAppend(t, j, event.UserPrompt{Text: "two"})
			j.Close()

			l, err = s.Load("s1")
			if err != nil {
				t.Fatal(err)
			}
			want := []event.Event{event.UserPrompt{Text: "one"}, event.TurnEnd{StopReason: event.EndTurn}, event.UserPrompt{Text: "two"}}
			if len(l.Warnings) != 0 || len(l.Events) != 3 || l.Events[2] != want[2] || l.LastSeq != 4 {
				t.Errorf("after repair: events %#v, warnings %q, last seq %d", l.Events, l.Warnings, l.LastSeq)
			}
		})
	}
}

func TestOpenAppendWithoutRecords(t *testing.T) {
	s, state := newTestStore(t)
	path := filepath.Join(state, "sessions", "torn.jsonl")
	if err := os.WriteFile(path, []byte(`{"v":1,"seq":1,"type":"sess`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.OpenAppend("torn"); !errors.Is(err, ErrNoHeader) {
		t.Errorf("OpenAppend = %v, want ErrNoHeader", err)
	}
	if _, err := s.Load("torn"); !errors.Is(err, ErrNoHeader) {
		t.Errorf("Load = %v, want ErrNoHeader", err)
	}
}

// TestOpenAppendSeq checks that appending continues the sequence even when
// the last lines are bad and the journal spans many read windows.
func TestOpenAppendSeq(t *testing.T) {
	s, _ := newTestStore(t)
	j := mustCreate(t, s, "s1", "/w")
	for range 300 {
		mustAppend(t, j, event.ToolResult{ID: "c", Name: "bash", Result: event.Result{CardOutput: strings.Repeat("o", 1000)}})
	}
	j.Close()
	path, _ := s.Path("s1")
	appendFile(t, path, "garbage\n"+strings.Repeat("\x00", 200<<10)+"\n")
	j, err := s.OpenAppend("s1")
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, j, event.UserPrompt{Text: "next"})
	j.Close()
	lines := readLines(t, path)
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, `{"v":2,"seq":302,`) {
		t.Errorf("last line %.40s", last)
	}
}

func TestBadLines(t *testing.T) {
	s, state := newTestStore(t)
	j := mustCreate(t, s, "s1", "/w")
	mustAppend(t, j, event.UserPrompt{Text: "one"})
	j.Close()
	path := filepath.Join(state, "sessions", "s1.jsonl")
	good := func(seq int, text string) string {
		return `{"v":1,"seq":` + string(rune('0'+seq)) + `,"t":"2026-05-01T12:03:05Z","type":"notice","text":"` + text + `"}`
	}
	bad := []struct {
		line string
		warn string
	}{
		{"this is not json", "line 3: invalid record"},
		{good(3, "a"), ""},
		{strings.Repeat("\x00", 64), "line 5: 64 NUL bytes skipped"},
		{strings.Repeat("\x00", 10) + good(4, "after NULs"), "line 6: 10 NUL bytes skipped"},
		{`{"v":3,"seq":5,"type":"notice","text":{"rich":true}}`, "line 7: notice record of version 3 is newer"},
		{`{"v":3,"seq":5,"type":"notice","text":"x"}`, "line 8: notice record of version 3 is newer"},
		{`{"v":1,"seq":5,"type":"hologram"}`, `line 9: unknown record type "hologram"`},
		{``, "line 10: blank"},
		{`{"seq":5,"type":"notice"}`, "line 11: record without a version"},
		{`{"v":1,"seq":5,"type":"state"}`, "line 12: state record without a key"},
		{`{"v":1,"seq":5,"t":"2026-05-01T12:03:05Z","type":"session","id":"again"}`, "line 13: second session header"},
		{good(6, "b"), ""},
		{good(2, "old seq"), "line 15: seq 2 does not follow seq 6"},
		{good(7, "c") + "\x00\x00" + good(8, "d"), "line 16: 2 NUL bytes skipped"},
	}
	var data strings.Builder
	for _, b := range bad {
		data.WriteString(b.line + "\n")
	}
	data.WriteString(`{"v":1,"seq":9,"type":"noti`)
	appendFile(t, path, data.String())

	l, err := s.Load("s1")
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, ev := range l.Events[1:] {
		texts = append(texts, ev.(event.Notice).Text)
	}
	if got := strings.Join(texts, ","); got != "a,after NULs,b,old seq,c,d" || l.Events[0] != (event.UserPrompt{Text: "one"}) {
		t.Errorf("events %#v", l.Events)
	}
	var want []string
	for _, b := range bad {
		if b.warn != "" {
			want = append(want, b.warn)
		}
	}
	want = append(want, "line 17: incomplete last line")
	if len(l.Warnings) != len(want) {
		t.Errorf("got %d warnings, want %d:\n%s", len(l.Warnings), len(want), strings.Join(l.Warnings, "\n"))
	}
	for i := range min(len(want), len(l.Warnings)) {
		if !strings.HasPrefix(l.Warnings[i], want[i]) {
			t.Errorf("warning %d: %q, want prefix %q", i, l.Warnings[i], want[i])
		}
	}
}

func TestLongLines(t *testing.T) {
	lr := newLineReader(strings.NewReader("short\n"+strings.Repeat("x", 1000)+"\nlast\nlong tail without newline"), 100)
	type line struct {
		text           string
		complete, long bool
	}
	var got []line
	for {
		b, complete, long, err := lr.next()
		if err != nil {
			break
		}
		got = append(got, line{string(b), complete, long})
	}
	want := []line{{"short", true, false}, {"", true, true}, {"last", true, false}, {"long tail without newline", false, false}}
	if len(got) != len(want) {
		t.Fatalf("lines %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestWarningsCapped(t *testing.T) {
	input := `{"v":1,"seq":1,"type":"session","id":"x"}` + "\n" + strings.Repeat("junk\n", maxWarnings+20)
	l, err := Read(strings.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Warnings) != maxWarnings+1 || l.Warnings[maxWarnings] != "… and 20 more warnings" {
		t.Errorf("%d warnings, last %q", len(l.Warnings), l.Warnings[len(l.Warnings)-1])
	}
}

func TestReadWithoutHeader(t *testing.T) {
	if _, err := Read(strings.NewReader("")); !errors.Is(err, ErrNoHeader) {
		t.Errorf("Read(empty) = %v", err)
	}
	if _, err := Read(strings.NewReader("junk\n")); !errors.Is(err, ErrNoHeader) {
		t.Errorf("Read(junk) = %v", err)
	}
	l, err := Read(strings.NewReader(`{"v":1,"seq":2,"type":"user_prompt","text":"hi"}` + "\n"))
	if err != nil || len(l.Events) != 1 || len(l.Warnings) != 1 || l.Warnings[0] != "no session header record" {
		t.Errorf("Read(headerless) = %+v, %v", l, err)
	}
	if _, err := LoadFile(filepath.Join(t.TempDir(), "missing.jsonl")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadFile(missing) = %v", err)
	}
}

func TestStream(t *testing.T) {
	s, _ := newTestStore(t)
	j := mustCreate(t, s, "s1", "/w")
	mustAppend(t, j, event.UserPrompt{Text: "one"}, event.Notice{Text: "n"}, event.TurnEnd{StopReason: event.EndTurn})
	if err := j.AppendState("mode", "ask"); err != nil {
		t.Fatal(err)
	}
	j.Close()
	var kinds []string
	warnings, err := s.Stream("s1", func(r Record) error {
		switch {
		case r.Header != nil:
			kinds = append(kinds, "header:"+r.Header.Cwd)
		case r.State != nil:
			kinds = append(kinds, "state:"+r.State.Key+"="+string(r.State.Value))
		default:
			kinds = append(kinds, strings.TrimPrefix(typeName(r.Event), "agent."))
		}
		return nil
	})
	if err != nil || len(warnings) != 0 {
		t.Fatal(err, warnings)
	}
	if got := strings.Join(kinds, " "); got != `header:/w UserPrompt Notice TurnEnd state:mode="ask"` {
		t.Errorf("streamed %s", got)
	}

	stop := errors.New("stop")
	n := 0
	_, err = s.Stream("s1", func(Record) error {
		n++
		if n == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 2 {
		t.Errorf("Stream stopped after %d records with %v", n, err)
	}
}

func typeName(ev event.Event) string {
	switch ev.(type) {
	case event.UserPrompt:
		return "UserPrompt"
	case event.Notice:
		return "Notice"
	case event.TurnEnd:
		return "TurnEnd"
	}
	return "other"
}

func TestLockInProcess(t *testing.T) {
	s, state := newTestStore(t)
	j := mustCreate(t, s, "s1", "/w")
	if _, err := s.OpenAppend("s1"); !errors.Is(err, ErrLocked) {
		t.Fatalf("second OpenAppend = %v, want ErrLocked", err)
	}
	other, err := OpenStore(state)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.OpenAppend("s1"); !errors.Is(err, ErrLocked) {
		t.Fatalf("OpenAppend through another store = %v, want ErrLocked", err)
	}
	if _, err := s.Load("s1"); err != nil {
		t.Errorf("Load while locked = %v", err)
	}
	j.Close()
	j2, err := other.OpenAppend("s1")
	if err != nil {
		t.Fatalf("OpenAppend after Close = %v", err)
	}
	j2.Close()
}

// lockHelper starts this test binary as a second process that opens the
// session s1 of state for appending (see runLockHelper).
func lockHelper(t *testing.T, state string) (cmd *exec.Cmd, stdin interface{ Close() error }, firstLine string) {
	t.Helper()
	cmd = exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+state)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper said %q: %v", line, err)
	}
	return cmd, in, strings.TrimSpace(line)
}

func TestLockAcrossProcesses(t *testing.T) {
	t.Run("other process holds the lock", func(t *testing.T) {
		s, state := newTestStore(t)
		j := mustCreate(t, s, "s1", "/w")
		j.Close()
		cmd, stdin, line := lockHelper(t, state)
		if line != "locked" {
			t.Fatalf("helper: %q", line)
		}
		_, err := s.OpenAppend("s1")
		if !errors.Is(err, ErrLocked) {
			t.Fatalf("OpenAppend while another process holds it = %v", err)
		}
		if !strings.Contains(err.Error(), "open for writing elsewhere") {
			t.Errorf("unclear message: %v", err)
		}
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper: %v", err)
		}
		j, err = s.OpenAppend("s1")
		if err != nil {
			t.Fatalf("OpenAppend after the other process exited = %v", err)
		}
		j.Close()
	})
	t.Run("this process holds the lock", func(t *testing.T) {
		s, state := newTestStore(t)
		mustCreate(t, s, "s1", "/w")
		cmd, stdin, line := lockHelper(t, state)
		if !strings.HasPrefix(line, "refused: ") || !strings.Contains(line, "open for writing elsewhere") {
			t.Errorf("helper: %q", line)
		}
		stdin.Close()
		var ee *exec.ExitError
		if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Errorf("helper exit: %v", err)
		}
	})
}
