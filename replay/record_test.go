package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/tools"
)

func intp(n int) *int { return &n }

func TestRoundTrip(t *testing.T) {
	full := tools.WithOutcome(event.Result{Text: "out\n[stderr]\nerr\n[exit code: 2]", IsError: true, CardOutput: "out\nerr\n", Declined: "rule", Task: &event.Task{ID: "bash-3", Status: "completed"}}, tools.Outcome{ExitCode: intp(2), Signal: "SIGTERM", TimedOut: true, TimeoutMs: 5000, SpillPath: "/tmp/spill/x.log", Truncated: true})
	tests := []struct {
		name string
		ev   event.Event
		// wire is a substring the record's line must contain.
		wire string
	}{
		{"user prompt", event.UserPrompt{Text: "list <files> & \"more\"\nline two"}, `"type":"user_prompt","text":"list <files> & \"more\"\nline two"`},
		{"assistant text only", event.AssistantMessage{Text: "done"}, `"type":"assistant","text":"done"`},
		{"assistant with calls", event.AssistantMessage{Text: "t", Reasoning: "r", ToolCalls: []event.CallInfo{
			{ID: "c1", Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)},
			{ID: "c2", Name: "bash", Args: json.RawMessage(`{"command": "ls"`)},
		}}, `"toolCalls":[{"id":"c1","name":"bash","args":{"command":"ls"}},{"id":"c2","name":"bash","argsText":"{\"command\": \"ls\""}]`},
		{"tool call compact args", event.ToolCall{ID: "c1", Name: "bash", Args: json.RawMessage(`{"command":"ls -la","timeoutMs":5}`)}, `"args":{"command":"ls -la","timeoutMs":5}`},
		{"tool call invalid json", event.ToolCall{ID: "c1", Name: "bash", Args: json.RawMessage(`{"command":"ls`)}, `"argsText":"{\"command\":\"ls"`},
		{"tool call not json at all", event.ToolCall{ID: "c1", Name: "bash", Args: json.RawMessage(`ls -la`)}, `"argsText":"ls -la"`},
		{"tool call spaced json", event.ToolCall{ID: "c1", Name: "bash", Args: json.RawMessage("{ \"command\" : \"ls\" }\n")}, `"argsText":"{ \"command\" : \"ls\" }\n"`},
		{"tool call json string", event.ToolCall{ID: "c1", Name: "bash", Args: json.RawMessage(`"ls"`)}, `"args":"ls"`},
		{"tool call null", event.ToolCall{ID: "c1", Name: "bash", Args: json.RawMessage(`null`)}, `"args":null`},
		{"tool call no args", event.ToolCall{ID: "c1", Name: "bash"}, `"type":"tool_call","id":"c1","name":"bash"}`},
		{"tool call html and separators", event.ToolCall{ID: "c1", Name: "bash", Args: json.RawMessage("{\"c\":\"a<b && c>d \u2028\u2029 \\u003c é\"}")}, `"args":{"c":"a<b && c>d`},
		{"tool call invalid utf-8", event.ToolCall{ID: "c1", Name: "bash", Args: json.RawMessage("{\"c\":\"\xff\xfe\"}")}, `"argsBytes":"eyJjIjoi//4ifQ=="`},
		{"direct call", event.ToolCall{ID: "d1", Name: "bash", Args: json.RawMessage(`{"command":"make"}`), Direct: true}, `"direct":true`},
		{"asked call", event.ToolCall{ID: "c1", Name: "bash", Args: json.RawMessage(`{"command":"make"}`), Pending: true}, `"pending":true`},
		{"tool result every field", event.ToolResult{ID: "c1", Name: "bash", Args: json.RawMessage(`{"command":"x"`), Result: full}, `"argsText":"{\"command\":\"x\""`},
		{"tool result exit 0", event.ToolResult{ID: "c1", Name: "bash", Args: json.RawMessage(`{"command":"true"}`), Result: tools.WithOutcome(event.Result{Text: ""}, tools.Outcome{ExitCode: intp(0)})}, `"result":{"text":"","payload":{"exitCode":0}}`},
		{"notice", event.Notice{Text: "task bash-1 completed"}, `"type":"notice","text":"task bash-1 completed"`},
		{"error", event.ErrorMessage{Text: "provider: 401"}, `"type":"error","text":"provider: 401"`},
		{"turn end", event.TurnEnd{StopReason: event.Cancelled}, `"type":"turn_end","stopReason":"cancelled"`},
		{"usage", event.Usage{Model: "m", Used: 1200, Size: 8000, Prompt: 1000, Completion: 200, Cached: 800, Reasoning: 50, Known: true, RequestSize: 3900, Cost: 0.25, Currency: "USD"},
			`"type":"usage","usage":{"model":"m","used":1200,"size":8000,"prompt":1000,"completion":200,"cached":800,"reasoning":50,"known":true,"requestSize":3900,"cost":0.25,"currency":"USD"}`},
		{"usage estimated", event.Usage{Used: 10, Size: 100, Estimated: true}, `"usage":{"used":10,"size":100,"estimated":true}`},
		{"compaction", event.Compaction{Reason: event.CompactTooLong, Model: "m", ElideBefore: 12, Elided: 4, SummaryBefore: 9, Summary: "we did <x>", Turns: 3,
			Dropped: true, SummaryError: "HTTP 500", Before: 900, After: 200, Size: 1000, RequestTokens: 1100, RequestSize: 4000, ProviderWindow: 1000},
			`"type":"compaction","compaction":{"reason":"too_long","model":"m","elideBefore":12,"elided":4,"summaryBefore":9,"summary":"we did <x>","turns":3,"dropped":true,`},
		{"command", event.Command{Text: "/model m2"}, `"type":"command","text":"/model m2"`},
		{"info", event.Info{Text: "model: m2"}, `"type":"info","text":"model: m2"`},
		{"instructions", event.Instructions{Files: []string{"/r/AGENTS.md", "/r/sub/AGENTS.md"}, Bytes: 120, Cut: true, Digest: "ab12"},
			`"type":"instructions","instructions":{"files":["/r/AGENTS.md","/r/sub/AGENTS.md"],"bytes":120,"cut":true,"digest":"ab12"}`},
		{"file changes", event.FileChanges{ID: "changes-c1", Call: "c1", Task: "bash-2", Dir: "/w", Files: []event.FileChange{
			{Path: "src/a.go", Op: event.ChangeModified, Old: "ab", New: "cd", OldSize: 10, NewSize: 12, Mode: 0o644, Line: 3},
			{Path: "bin/app", Op: event.ChangeCreated, New: "ef", NewSize: 4096, Mode: 0o755, Binary: true},
			{Path: "big.log", Op: event.ChangeDeleted, OldSize: 2 << 20, Large: true},
		}}, `"type":"file_changes","changes":{"id":"changes-c1","call":"c1","task":"bash-2","dir":"/w","files":[{"path":"src/a.go","op":"modified","old":"ab","new":"cd","oldSize":10,"newSize":12,"mode":420,"line":3},`},
		{"undo", event.FileChanges{ID: "undo-1", Dir: "/w", Undoes: []string{"changes-c2", "changes-c1"}, Refused: []string{"notes.txt changed since; not undone"}},
			`"changes":{"id":"undo-1","dir":"/w","undoes":["changes-c2","changes-c1"],"refused":["notes.txt changed since; not undone"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newTestStore(t)
			j := mustCreate(t, s, "s1", "/w")
			mustAppend(t, j, tt.ev)
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			path, _ := s.Path("s1")
			lines := readLines(t, path)
			if len(lines) != 2 {
				t.Fatalf("got %d lines, want 2: %q", len(lines), lines)
			}
			if !strings.HasPrefix(lines[1], `{"v":2,"seq":2,"t":"2026-05-01T12:03:04.002Z",`) {
				t.Errorf("envelope: %s", lines[1])
			}
			if !strings.Contains(lines[1], tt.wire) {
				t.Errorf("line %s\nlacks %s", lines[1], tt.wire)
			}
			l, err := s.Load("s1")
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Warnings) != 0 {
				t.Errorf("warnings: %q", l.Warnings)
			}
			if len(l.Events) != 1 || !reflect.DeepEqual(l.Events[0], tt.ev) {
				t.Errorf("loaded %#v\nwant %#v", l.Events, tt.ev)
			}
		})
	}
}

func TestHeaderRecord(t *testing.T) {
	s, _ := newTestStore(t)
	j := mustCreate(t, s, "s1", "/home/u/p")
	j.Close()
	path, _ := s.Path("s1")
	want := `{"v":2,"seq":1,"t":"2026-05-01T12:03:04.001Z","type":"session","id":"s1","cwd":"/home/u/p","created":"2026-05-01T12:03:04.001Z","daemonVersion":"test"}`
	if got := readLines(t, path); len(got) != 1 || got[0] != want {
		t.Errorf("header line\n got %q\nwant %q", got, want)
	}
	l, err := s.Load("s1")
	if err != nil {
		t.Fatal(err)
	}
	if l.Header.ID != "s1" || l.Header.Cwd != "/home/u/p" || l.Header.DaemonVersion != "test" || l.Header.Created.IsZero() || l.LastSeq != 1 {
		t.Errorf("header %+v, last seq %d", l.Header, l.LastSeq)
	}
}

func TestAppendSkipsStreamingEvents(t *testing.T) {
	s, _ := newTestStore(t)
	j := mustCreate(t, s, "s1", "/w")
	for _, ev := range []event.Event{event.TextDelta{Text: "a"}, event.ThoughtDelta{Text: "b"}, event.ToolOutput{ID: "c", Data: "d"}} {
		if err := j.Append(ev); err != nil {
			t.Errorf("Append(%T) = %v", ev, err)
		}
	}
	if err := j.Append(nil); !errors.Is(err, ErrUnknownEvent) {
		t.Errorf("Append(nil) = %v, want ErrUnknownEvent", err)
	}
	j.Close()
	l, err := s.Load("s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Events) != 0 {
		t.Errorf("journaled %#v", l.Events)
	}
}

func TestState(t *testing.T) {
	s, _ := newTestStore(t)
	j := mustCreate(t, s, "s1", "/w")
	mustAppend(t, j, event.UserPrompt{Text: "hi"})
	for _, st := range []struct {
		key string
		val any
	}{{"mode", "ask"}, {"rules", []string{"git status"}}, {"mode", "auto"}} {
		if err := j.AppendState(st.key, st.val); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.AppendState("", 1); err == nil {
		t.Error("AppendState with an empty key succeeded")
	}
	j.Close()
	l, err := s.Load("s1")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]json.RawMessage{"mode": json.RawMessage(`"auto"`), "rules": json.RawMessage(`["git status"]`)}
	if !reflect.DeepEqual(l.State, want) {
		t.Errorf("state %s, want %s", l.State, want)
	}
	if len(l.Events) != 1 {
		t.Errorf("events %#v", l.Events)
	}
}

func TestCardOutputCap(t *testing.T) {
	s, _ := newTestStore(t)
	j := mustCreate(t, s, "s1", "/w")
	var b strings.Builder
	for i := 0; b.Len() < 3<<20; i++ {
		b.WriteString(strings.Repeat("é", 30) + " line\n")
	}
	out := b.String()
	mustAppend(t, j, event.ToolResult{ID: "c", Name: "bash", Result: tools.WithOutcome(event.Result{Text: "short", CardOutput: out}, tools.Outcome{ExitCode: intp(0)})})
	j.Close()
	l, err := s.Load("s1")
	if err != nil {
		t.Fatal(err)
	}
	got := l.Events[0].(event.ToolResult).Result.CardOutput
	marker, tail, _ := strings.Cut(got, "\n")
	if len(got) > MaxCardOutput || !strings.HasSuffix(out, tail) || !strings.HasSuffix(marker, "bytes of earlier output not journaled]") {
		t.Errorf("capped output: %d bytes, marker %q, tail is suffix: %v", len(got), marker, strings.HasSuffix(out, tail))
	}
	if !strings.HasPrefix(tail, "é") {
		t.Errorf("tail does not start on a line: %q", tail[:20])
	}
}

func TestAppendTooLarge(t *testing.T) {
	s, _ := newTestStore(t)
	j := mustCreate(t, s, "s1", "/w")
	j.enc.max = 200
	if err := j.Append(event.UserPrompt{Text: strings.Repeat("x", 300)}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Append = %v, want ErrTooLarge", err)
	}
	mustAppend(t, j, event.UserPrompt{Text: "small"})
	j.Close()
	l, err := s.Load("s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Events) != 1 || l.LastSeq != 2 || len(l.Warnings) != 0 {
		t.Errorf("events %#v, last seq %d, warnings %q", l.Events, l.LastSeq, l.Warnings)
	}
}

func TestConcurrentAppend(t *testing.T) {
	s, _ := newTestStore(t)
	j := mustCreate(t, s, "s1", "/w")
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := j.Append(event.Notice{Text: strings.Repeat("n", w*10+i)}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	j.Close()
	path, _ := s.Path("s1")
	seqs := 0
	warnings, err := scanPath(path, func(r Record) error {
		seqs++
		if r.Seq != uint64(seqs) {
			t.Errorf("record %d has seq %d", seqs, r.Seq)
		}
		return nil
	})
	if err != nil || len(warnings) != 0 || seqs != writers*each+1 {
		t.Errorf("read %d records, warnings %q, err %v", seqs, warnings, err)
	}
}

func TestClosedJournal(t *testing.T) {
	s, _ := newTestStore(t)
	j := mustCreate(t, s, "s1", "/w")
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if err := j.Append(event.UserPrompt{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close = %v", err)
	}
	if err := j.Sync(); !errors.Is(err, ErrClosed) {
		t.Errorf("Sync after Close = %v", err)
	}
	if filepath.Base(s.Dir()) != "sessions" {
		t.Errorf("Dir = %s", s.Dir())
	}
}

// A version 1 tool_result kept bash's fields beside the text; it reads as
// the tool-agnostic result with those fields as bash's payload and the
// task as Task, exactly what the tools write today.
func TestReadsVersion1Results(t *testing.T) {
	line := `{"v":1,"seq":3,"t":"2026-05-01T12:03:04Z","type":"tool_result","id":"c1","name":"bash","args":{"command":"x"},` +
		`"result":{"text":"out","isError":true,"exitCode":2,"signal":"SIGTERM","timedOut":true,"timeoutMs":5,"spillPath":"/s","truncated":true,"cardOutput":"o","taskId":"bash-1","taskStatus":"completed","declined":"no"}}`
	l, err := Read(strings.NewReader(line + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := l.Events[0].(event.ToolResult).Result
	want := event.Result{Text: "out", IsError: true, Declined: "no", CardOutput: "o",
		Task:    &event.Task{ID: "bash-1", Status: "completed"},
		Payload: json.RawMessage(`{"exitCode":2,"signal":"SIGTERM","timedOut":true,"timeoutMs":5,"spillPath":"/s","truncated":true}`)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// A card of control bytes (a capture of /dev/zero) is kept compact: the
// line for a full 2 MiB card of NULs stays under 2.2 MiB, and it reads back
// byte for byte.
func TestCardOutputOfControlBytesIsCompact(t *testing.T) {
	for _, tt := range []struct {
		name string
		card string
	}{
		{"NULs", strings.Repeat("\x00", MaxCardOutput)},
		{"escapes", strings.Repeat("\x1b[31mred\x1b[0m\x01\x02", MaxCardOutput/14)},
		{"text", strings.Repeat("plain text line\n", 1000)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var r wireRecord
			if _, err := fromEvent(event.ToolResult{ID: "c", Name: "bash", Result: event.Result{Text: "t", CardOutput: tt.card}}, &r); err != nil {
				t.Fatal(err)
			}
			r.V = Version
			line, err := newEncoder().line(&r)
			if err != nil {
				t.Fatal(err)
			}
			if len(line) > 2200<<10 {
				t.Errorf("line of %d bytes for a %d-byte card", len(line), len(tt.card))
			}
			l, err := Read(bytes.NewReader(line))
			if err != nil {
				t.Fatal(err)
			}
			if got := l.Events[0].(event.ToolResult).Result.CardOutput; got != tt.card {
				t.Errorf("card output does not round-trip (%d bytes back of %d)", len(got), len(tt.card))
			}
		})
	}
}

func TestDecisionRoundTrip(t *testing.T) {
	d := event.Decision{ID: "c1", Subject: "rm -rf build", Verdict: event.VerdictAsk, Outcome: "reject", Reason: "declined"}
	var r wireRecord
	if _, err := fromEvent(d, &r); err != nil {
		t.Fatal(err)
	}
	r.V = Version
	line, err := newEncoder().line(&r)
	if err != nil {
		t.Fatal(err)
	}
	l, err := Read(bytes.NewReader(line))
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Events[0]; !reflect.DeepEqual(got, d) {
		t.Errorf("got %+v, want %+v", got, d)
	}
}
