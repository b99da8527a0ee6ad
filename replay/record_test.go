package replay

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/tools"
)

func intp(n int) *int { return &n }

func TestRoundTrip(t *testing.T) {
	full := tools.Result{
		Text: "out\n[stderr]\nerr\n[exit code: 2]", IsError: true, ExitCode: intp(2), Signal: "SIGTERM",
		TimedOut: true, TimeoutMs: 5000, SpillPath: "/tmp/spill/x.log", Truncated: true,
		CardOutput: "out\nerr\n", TaskID: "bash-3", TaskStatus: "completed", Declined: "rule",
	}
	tests := []struct {
		name string
		ev   agent.Event
		// wire is a substring the record's line must contain.
		wire string
	}{
		{"user prompt", agent.UserPrompt{Text: "list <files> & \"more\"\nline two"}, `"type":"user_prompt","text":"list <files> & \"more\"\nline two"`},
		{"assistant text only", agent.AssistantMessage{Text: "done"}, `"type":"assistant","text":"done"`},
		{"assistant with calls", agent.AssistantMessage{Text: "t", Reasoning: "r", ToolCalls: []agent.ToolCallInfo{
			{ID: "c1", Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)},
			{ID: "c2", Name: "bash", Args: json.RawMessage(`{"command": "ls"`)},
		}}, `"toolCalls":[{"id":"c1","name":"bash","args":{"command":"ls"}},{"id":"c2","name":"bash","argsText":"{\"command\": \"ls\""}]`},
		{"tool call compact args", agent.ToolCall{ID: "c1", Name: "bash", Args: json.RawMessage(`{"command":"ls -la","timeoutMs":5}`)}, `"args":{"command":"ls -la","timeoutMs":5}`},
		{"tool call invalid json", agent.ToolCall{ID: "c1", Name: "bash", Args: json.RawMessage(`{"command":"ls`)}, `"argsText":"{\"command\":\"ls"`},
		{"tool call not json at all", agent.ToolCall{ID: "c1", Name: "bash", Args: json.RawMessage(`ls -la`)}, `"argsText":"ls -la"`},
		{"tool call spaced json", agent.ToolCall{ID: "c1", Name: "bash", Args: json.RawMessage("{ \"command\" : \"ls\" }\n")}, `"argsText":"{ \"command\" : \"ls\" }\n"`},
		{"tool call json string", agent.ToolCall{ID: "c1", Name: "bash", Args: json.RawMessage(`"ls"`)}, `"args":"ls"`},
		{"tool call null", agent.ToolCall{ID: "c1", Name: "bash", Args: json.RawMessage(`null`)}, `"args":null`},
		{"tool call no args", agent.ToolCall{ID: "c1", Name: "bash"}, `"type":"tool_call","id":"c1","name":"bash"}`},
		{"tool call html and separators", agent.ToolCall{ID: "c1", Name: "bash", Args: json.RawMessage("{\"c\":\"a<b && c>d \u2028\u2029 \\u003c é\"}")}, `"args":{"c":"a<b && c>d`},
		{"tool call invalid utf-8", agent.ToolCall{ID: "c1", Name: "bash", Args: json.RawMessage("{\"c\":\"\xff\xfe\"}")}, `"argsBytes":"eyJjIjoi//4ifQ=="`},
		{"direct call", agent.ToolCall{ID: "d1", Name: "bash", Args: json.RawMessage(`{"command":"make"}`), Direct: true}, `"direct":true`},
		{"tool result every field", agent.ToolResult{ID: "c1", Name: "bash", Args: json.RawMessage(`{"command":"x"`), Result: full}, `"argsText":"{\"command\":\"x\""`},
		{"tool result exit 0", agent.ToolResult{ID: "c1", Name: "bash", Args: json.RawMessage(`{"command":"true"}`), Result: tools.Result{Text: "", ExitCode: intp(0)}}, `"result":{"text":"","exitCode":0}`},
		{"notice", agent.Notice{Text: "task bash-1 completed"}, `"type":"notice","text":"task bash-1 completed"`},
		{"error", agent.ErrorMessage{Text: "provider: 401"}, `"type":"error","text":"provider: 401"`},
		{"turn end", agent.TurnEnd{StopReason: agent.Cancelled}, `"type":"turn_end","stopReason":"cancelled"`},
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
			if !strings.HasPrefix(lines[1], `{"v":1,"seq":2,"t":"2026-05-01T12:03:04.002Z",`) {
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
	want := `{"v":1,"seq":1,"t":"2026-05-01T12:03:04.001Z","type":"session","id":"s1","cwd":"/home/u/p","created":"2026-05-01T12:03:04.001Z","daemonVersion":"test"}`
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
	for _, ev := range []agent.Event{agent.TextDelta{Text: "a"}, agent.ThoughtDelta{Text: "b"}, agent.ToolOutput{ID: "c", Data: "d"}} {
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
	mustAppend(t, j, agent.UserPrompt{Text: "hi"})
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
	mustAppend(t, j, agent.ToolResult{ID: "c", Name: "bash", Result: tools.Result{Text: "short", CardOutput: out, ExitCode: intp(0)}})
	j.Close()
	l, err := s.Load("s1")
	if err != nil {
		t.Fatal(err)
	}
	got := l.Events[0].(agent.ToolResult).Result.CardOutput
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
	if err := j.Append(agent.UserPrompt{Text: strings.Repeat("x", 300)}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Append = %v, want ErrTooLarge", err)
	}
	mustAppend(t, j, agent.UserPrompt{Text: "small"})
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
				if err := j.Append(agent.Notice{Text: strings.Repeat("n", w*10+i)}); err != nil {
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
	if err := j.Append(agent.UserPrompt{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close = %v", err)
	}
	if err := j.Sync(); !errors.Is(err, ErrClosed) {
		t.Errorf("Sync after Close = %v", err)
	}
	if filepath.Base(s.Dir()) != "sessions" {
		t.Errorf("Dir = %s", s.Dir())
	}
}
