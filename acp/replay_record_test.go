package acp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/eventually"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
	"github.com/dsh-acp/dsh-acp/replay"
	"github.com/dsh-acp/dsh-acp/tools"
)

// The journals under testdata/sessions are recorded from real runs of the
// daemon (`!` commands, and a scripted fake model for the tool calls only a
// model makes), except what no run can produce on demand: a torn last line
// is appended by hand, and handwritten_args is written with package replay.
// Normal test runs only read them; -record runs the recordings again.
var (
	recordJournals = flag.Bool("record", false, "re-record testdata/sessions/*.jsonl from real runs of the daemon, and their v2 twins")
	recordV2       = flag.Bool("record-v2", false, "rewrite only the v2 twins testdata/sessions/v2/*.jsonl from the v1 journals")
)

const (
	sessionsDir    = "../testdata/sessions"
	transcriptsDir = "../testdata/transcripts"
	// handwrittenVersion is the daemonVersion of journals not recorded.
	handwrittenVersion = "handwritten"
	// tornText is in the torn last line, and must never reach a client.
	tornText = "TORN-RECORD-MUST-NOT-REPLAY"
)

// journalCase is one journal under testdata/sessions.
type journalCase struct {
	name        string
	handwritten bool
	torn        bool // ends with a torn line on purpose
	// shape checks that the journal holds the card shape it is meant to
	// cover (a re-recording that missed it fails TestRecordedJournals).
	shape func(l *replay.Loaded) error
}

func journalCases() []journalCase {
	return []journalCase{
		{name: "foreground_success", shape: allOf(
			journalHasResult("a command exiting 0 with output on both streams", func(r event.ToolResult) bool {
				return exitCodeIs(r.Result, 0) && strings.Contains(r.Result.CardOutput, "bold") && strings.Contains(r.Result.CardOutput, "to-stderr")
			}),
			journalHasResult("a command exiting 0 with no output", func(r event.ToolResult) bool {
				return exitCodeIs(r.Result, 0) && r.Result.CardOutput == ""
			}),
			journalHas("an error message (a failed model request)", func(ev event.Event) bool { _, ok := ev.(event.ErrorMessage); return ok }),
		)},
		{name: "foreground_failure", shape: journalHasResult("exit code 3", func(r event.ToolResult) bool {
			return exitCodeIs(r.Result, 3) && !r.Result.IsError
		})},
		{name: "foreground_timeout", shape: allOf(
			journalHasResult("a timed-out command", func(r event.ToolResult) bool { return tools.OutcomeOf(r.Result).TimedOut }),
			journalHas("assistant reasoning", func(ev event.Event) bool {
				m, ok := ev.(event.AssistantMessage)
				return ok && m.Reasoning != ""
			}),
		)},
		{name: "foreground_signal", shape: journalHasResult("death by SIGKILL", func(r event.ToolResult) bool {
			return tools.OutcomeOf(r.Result).Signal == "SIGKILL" && tools.OutcomeOf(r.Result).ExitCode == nil
		})},
		{name: "truncated_spill", shape: journalHasResult("truncated output with a spill file", func(r event.ToolResult) bool {
			return tools.OutcomeOf(r.Result).Truncated && tools.OutcomeOf(r.Result).SpillPath != "" && strings.Contains(r.Result.CardOutput, tools.OutcomeOf(r.Result).SpillPath)
		})},
		{name: "background", shape: allOf(
			journalHasResult("a background start", func(r event.ToolResult) bool {
				return r.Name == "bash" && taskIs(r.Result, "bash-1", "running")
			}),
			journalHasResult("bash_output of a running task with its output", func(r event.ToolResult) bool {
				return r.Name == "bash_output" && taskIs(r.Result, "", "running") && strings.Contains(r.Result.Text, "tick")
			}),
			journalHasResult("bash_kill of a running task", func(r event.ToolResult) bool {
				return r.Name == "bash_kill" && taskIs(r.Result, "", "killed")
			}),
			journalHasResult("bash_output of a completed task", func(r event.ToolResult) bool {
				return r.Name == "bash_output" && taskIs(r.Result, "", "completed") && strings.Contains(r.Result.Text, "quick")
			}),
			journalHas("a completion notice", func(ev event.Event) bool { _, ok := ev.(event.Notice); return ok }),
		)},
		{name: "cross_session_owner", shape: journalHasResult("a background task left running", func(r event.ToolResult) bool {
			return taskIs(r.Result, "bash-1", "running")
		})},
		{name: "cross_session_other", shape: allOf(
			journalHasResult("bash_output refused", func(r event.ToolResult) bool {
				return r.Name == "bash_output" && r.Result.IsError && r.Result.Text == "task bash-1 belongs to another session"
			}),
			journalHasResult("bash_kill refused", func(r event.ToolResult) bool {
				return r.Name == "bash_kill" && r.Result.IsError && r.Result.Text == "task bash-1 belongs to another session"
			}),
		)},
		{name: "malformed_args", shape: allOf(
			journalHasResult("invalid JSON arguments", func(r event.ToolResult) bool {
				return r.ID == "call_bad_json" && r.Result.IsError && strings.Contains(r.Result.Text, "not a JSON object")
			}),
			journalHasResult("an argument of the wrong type", func(r event.ToolResult) bool {
				return r.ID == "call_bad_type" && r.Result.IsError && strings.Contains(r.Result.Text, `"timeoutMs" must be a number`)
			}),
			journalHasResult("arguments that are not an object", func(r event.ToolResult) bool {
				return r.ID == "call_not_object" && r.Result.IsError
			}),
			journalHasResult("an unknown tool", func(r event.ToolResult) bool {
				return r.ID == "call_unknown_tool" && r.Result.IsError && strings.Contains(r.Result.Text, `unknown tool "python"`)
			}),
			journalHasResult("a missing required argument", func(r event.ToolResult) bool {
				return r.ID == "call_missing_arg" && r.Result.IsError && strings.Contains(r.Result.Text, `missing required field "task_id"`)
			}),
		)},
		{name: "interrupted_direct", shape: allOf(endsUnsettled(1, 0), journalHasResult("a command before the crash", func(r event.ToolResult) bool {
			return exitCodeIs(r.Result, 0)
		}))},
		{name: "interrupted_model", shape: endsUnsettled(1, 1)},
		{name: "torn_last_line", torn: true, shape: journalHasResult("a command before the torn line", func(r event.ToolResult) bool {
			return exitCodeIs(r.Result, 0) && r.Result.CardOutput == "kept\n"
		})},
		{name: "handwritten_args", handwritten: true, shape: allOf(
			journalHas("arguments that are not JSON", func(ev event.Event) bool {
				c, ok := ev.(event.ToolCall)
				return ok && !json.Valid(c.Args)
			}),
			journalHasResult("a tool this build does not know", func(r event.ToolResult) bool { return r.Name == "fetch_url" && !r.Result.IsError }),
		)},
	}
}

// recording is one real run of the daemon producing journals (by name).
type recording struct {
	name string
	run  func(t *testing.T) map[string][]byte
}

func recordings() []recording {
	return []recording{
		{"foreground", recordForeground},
		{"foreground_timeout", recordTimeout},
		{"truncated_spill", recordTruncated},
		{"background", recordBackground},
		{"cross_session", recordCrossSession},
		{"malformed_args", recordMalformed},
		{"interrupted_direct", recordInterruptedDirect},
		{"interrupted_model", recordInterruptedModel},
		{"handwritten_args", writeHandwritten},
	}
}

// recordAll writes every journal under testdata/sessions (and their v2
// twins, see writeV2Twins), and fails unless
// the recordings produced exactly the journals journalCases lists.
func recordAll(t *testing.T) {
	t.Helper()
	if err := os.MkdirAll(sessionsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	for _, r := range recordings() {
		t.Run("record_"+r.name, func(t *testing.T) {
			for name, b := range r.run(t) {
				got[name] = b
			}
		})
	}
	if t.Failed() {
		t.FailNow()
	}
	var names []string
	for _, c := range journalCases() {
		names = append(names, c.name)
		b, ok := got[c.name]
		if !ok {
			t.Fatalf("no recording produced %s", c.name)
		}
		if err := os.WriteFile(testJournalPath(c.name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name := range got {
		if !slices.Contains(names, name) {
			t.Fatalf("recording produced %s, which journalCases does not list", name)
		}
	}
}

func testJournalPath(name string) string { return filepath.Join(journalDir, name+".jsonl") }

// journalDir is where the journals under test are read from: the recorded
// version 1 journals, or their version 2 twins (see TestJournalFormats).
var journalDir = sessionsDir

// journalFormats are the journal format versions every replay test runs
// over, with the same golden transcripts: a v2 journal replays exactly as
// the v1 journal it was written from.
var journalFormats = []struct{ name, dir string }{
	{"v1", sessionsDir},
	{"v2", filepath.Join(sessionsDir, "v2")},
}

// forEachFormat runs fn once per journal format, with journalDir set.
func forEachFormat(t *testing.T, fn func(t *testing.T)) {
	t.Helper()
	for _, f := range journalFormats {
		t.Run(f.name, func(t *testing.T) {
			journalDir = f.dir
			defer func() { journalDir = sessionsDir }()
			fn(t)
		})
	}
}

// startScripted runs a daemon talking to a scripted fake model. marker is in
// its environment, so every process it starts carries it.
func startScripted(t *testing.T, marker string, script ...llmtest.Response) (*daemon, *llmtest.Server) {
	t.Helper()
	srv := llmtest.New(t, script...)
	d := startDaemon(t, acptest.ZedCapabilities(), nil,
		"DSH_BASE_URL="+srv.URL(), "DSH_API_KEY=test-key", "ACPTEST_MARKER="+marker)
	return d, srv
}

// closeAndWait closes the daemon's stdin and waits for it to exit cleanly.
func (d *daemon) closeAndWait() {
	d.t.Helper()
	if err := d.CloseStdin(); err != nil {
		d.t.Fatal(err)
	}
	if err := d.Wait(ctxT(d.t)); err != nil {
		d.t.Fatalf("daemon exit: %v", err)
	}
}

// sigkill SIGKILLs the daemon and waits until it is reaped.
func (d *daemon) sigkill() {
	d.t.Helper()
	if err := syscall.Kill(d.Pid(), syscall.SIGKILL); err != nil {
		d.t.Fatal(err)
	}
	select {
	case <-d.Exited():
	case <-time.After(10 * time.Second):
		d.t.Fatal("daemon not reaped 10s after SIGKILL")
	}
}

// journalBytes returns a session's journal file as it is now.
func (d *daemon) journalBytes(sid string) []byte {
	d.t.Helper()
	b, err := os.ReadFile(d.journalFilePath(sid))
	if err != nil {
		d.t.Fatal(err)
	}
	return b
}

func (d *daemon) journalFilePath(sid string) string {
	return filepath.Join(d.stateDir, "sessions", sid+".jsonl")
}

// promptInBackground sends a prompt without waiting; the channel yields its stop
// reason, or the error text.
func (d *daemon) promptInBackground(sid, text string) <-chan string {
	reply := make(chan string, 1)
	go func() {
		var r struct {
			StopReason string `json:"stopReason"`
		}
		if err := d.Call(context.Background(), "session/prompt", promptParams(sid, text), &r); err != nil {
			r.StopReason = err.Error()
		}
		reply <- r.StopReason
	}()
	return reply
}

// waitToolCall waits for a tool_call update of sid whose JSON contains substr.
func (d *daemon) waitToolCall(sid, substr string) {
	d.t.Helper()
	_, err := d.WaitUpdate(ctxT(d.t), sid, func(u json.RawMessage) bool {
		return acptest.UpdateKind(u) == "tool_call" && strings.Contains(string(u), substr)
	})
	if err != nil {
		d.t.Fatal(err)
	}
}

// killMarkedGroups SIGKILLs the process groups of the processes carrying marker
// (other than skip), and waits until they are gone. It returns how many
// processes it found.
func killMarkedGroups(t *testing.T, marker string, skip ...int) int {
	t.Helper()
	procs, err := acptest.ProcsWithMarker(marker)
	if err != nil {
		t.Fatal(err)
	}
	own := syscall.Getpgrp()
	n := 0
	for _, p := range procs {
		if slices.Contains(skip, p.PID) {
			continue
		}
		n++
		if p.PGID > 1 && p.PGID != own {
			_ = syscall.Kill(-p.PGID, syscall.SIGKILL)
		}
		_ = syscall.Kill(p.PID, syscall.SIGKILL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		left, err := acptest.ProcsWithMarker(marker)
		if err != nil {
			t.Fatal(err)
		}
		left = slices.DeleteFunc(left, func(p acptest.Proc) bool { return slices.Contains(skip, p.PID) })
		if len(left) == 0 {
			return n
		}
		select {
		case <-ctx.Done():
			t.Fatalf("processes with marker %s survive: %v", marker, left)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// waitMarkedProcs waits until at least n processes other than skip carry
// marker (none at all when n is 0).
func waitMarkedProcs(t *testing.T, marker string, n int, skip ...int) {
	t.Helper()
	var procs []acptest.Proc
	eventually.True(t, 10*time.Second, func() bool {
		var err error
		if procs, err = acptest.ProcsWithMarker(marker); err != nil {
			t.Fatal(err)
		}
		procs = slices.DeleteFunc(procs, func(p acptest.Proc) bool { return slices.Contains(skip, p.PID) })
		return n == 0 && len(procs) == 0 || n > 0 && len(procs) >= n
	}, "processes carrying the marker: want %d", n)
}

// noSurvivors fails the recording if a process the daemon started outlived
// its clean exit (and kills it).
func noSurvivors(t *testing.T, marker string) {
	t.Helper()
	if n := killMarkedGroups(t, marker); n > 0 {
		t.Errorf("%d processes outlived the daemon", n)
	}
}

func (d *daemon) promptExpect(sid, text, want string) {
	d.t.Helper()
	if got := d.prompt(sid, text); got != want {
		d.t.Fatalf("prompt %q: stopReason %q, want %q", text, got, want)
	}
}

func recordForeground(t *testing.T) map[string][]byte {
	out := map[string][]byte{}
	for name, prompts := range map[string][]string{
		"foreground_success": {"hello", "!printf '\\033[1mbold\\033[0m and ``` ticks\\n'; echo to-stderr >&2", "!true"},
		"foreground_failure": {"!echo failing; exit 3"},
		"foreground_signal":  {"!echo before; kill -9 $$"},
		"torn_last_line":     {"!echo kept"},
	} {
		var d *daemon
		if name == "foreground_success" {
			// "hello" meets a failing model and records its error message
			// (with no key at all the prompt would get auth-required).
			d, _ = startScripted(t, acptest.NewMarker(), llmtest.Error(400, "the request was refused"))
		} else {
			d = startDaemon(t, acptest.ZedCapabilities(), nil)
		}
		sid := d.newSession(t.TempDir())
		for _, p := range prompts {
			d.promptExpect(sid, p, "end_turn")
		}
		d.closeAndWait()
		out[name] = d.journalBytes(sid)
	}
	// A torn write: half a record, no newline.
	out["torn_last_line"] = append(out["torn_last_line"],
		`{"v":1,"seq":6,"t":"2026-01-02T03:04:05Z","type":"user_prompt","text":"`+tornText...)
	return out
}

func recordTruncated(t *testing.T) map[string][]byte {
	d := startDaemon(t, acptest.ZedCapabilities(), []string{"--output-limit", "1000", "--card-output-limit", "2048"})
	sid := d.newSession(t.TempDir())
	d.promptExpect(sid, "!seq 1 20000", "end_turn")
	d.closeAndWait()
	return map[string][]byte{"truncated_spill": d.journalBytes(sid)}
}

// thinkingFirst puts reasoning chunks before a response's own chunks.
func thinkingFirst(r llmtest.Response, thoughts ...string) llmtest.Response {
	var pre []llmtest.Chunk
	for _, th := range thoughts {
		pre = append(pre, llmtest.Think(th))
	}
	r.Chunks = append(pre, r.Chunks...)
	return r
}

func recordTimeout(t *testing.T) map[string][]byte {
	marker := acptest.NewMarker()
	d, _ := startScripted(t, marker,
		thinkingFirst(llmtest.Calls(llmtest.Call{ID: "call_timeout", Name: "bash",
			Args: `{"command":"echo started; sleep 30","description":"Run the slow job","timeoutMs":300}`}),
			"The job may hang, ", "so cap it at 300 ms."),
		llmtest.Reply("The job timed out after 300 ms."))
	sid := d.newSession(t.TempDir())
	d.promptExpect(sid, "run the slow job, but do not wait long", "end_turn")
	d.closeAndWait()
	noSurvivors(t, marker)
	return map[string][]byte{"foreground_timeout": d.journalBytes(sid)}
}

func recordBackground(t *testing.T) map[string][]byte {
	marker := acptest.NewMarker()
	d, _ := startScripted(t, marker,
		llmtest.Calls(llmtest.Call{ID: "call_bg_start", Name: "bash",
			Args: `{"command":"echo tick; touch started; sleep 600","description":"Start a ticker","run_in_background":true}`}),
		llmtest.Reply("Started bash-1."),
		llmtest.Calls(
			llmtest.Call{ID: "call_bg_read", Name: "bash_output", Args: `{"task_id":"bash-1"}`},
			llmtest.Call{ID: "call_bg_kill", Name: "bash_kill", Args: `{"task_id":"bash-1"}`}),
		llmtest.Reply("It printed tick; I stopped it."),
		llmtest.Calls(llmtest.Call{ID: "call_bg_quick", Name: "bash",
			Args: `{"command":"echo quick","description":"Run a quick job","run_in_background":true}`}),
		llmtest.Reply("Started bash-2."),
		llmtest.Calls(llmtest.Call{ID: "call_bg_done", Name: "bash_output", Args: `{"task_id":"bash-2"}`}),
		llmtest.Reply("It printed quick and exited 0."))
	cwd := t.TempDir()
	sid := d.newSession(cwd)
	d.promptExpect(sid, "start a ticker in the background", "end_turn")
	d.waitFor(func() bool { _, err := os.Stat(filepath.Join(cwd, "started")); return err == nil })
	time.Sleep(100 * time.Millisecond) // recording only: let the executor drain "tick"
	d.promptExpect(sid, "check on it, then stop it", "end_turn")
	d.promptExpect(sid, "run a quick job in the background", "end_turn")
	waitMarkedProcs(t, marker, 0, d.Pid())
	time.Sleep(100 * time.Millisecond) // recording only: let the completion notice arrive
	d.promptExpect(sid, "how did it go?", "end_turn")
	d.closeAndWait()
	noSurvivors(t, marker)
	return map[string][]byte{"background": d.journalBytes(sid)}
}

func recordCrossSession(t *testing.T) map[string][]byte {
	marker := acptest.NewMarker()
	d, _ := startScripted(t, marker,
		llmtest.Calls(llmtest.Call{ID: "call_owner_start", Name: "bash",
			Args: `{"command":"sleep 600","description":"Start a server","run_in_background":true}`}),
		llmtest.Reply("Started bash-1."),
		llmtest.Calls(
			llmtest.Call{ID: "call_other_read", Name: "bash_output", Args: `{"task_id":"bash-1"}`},
			llmtest.Call{ID: "call_other_kill", Name: "bash_kill", Args: `{"task_id":"bash-1"}`}),
		llmtest.Reply("Task bash-1 belongs to another session; I cannot touch it."))
	owner := d.newSession(t.TempDir())
	other := d.newSession(t.TempDir())
	d.promptExpect(owner, "start a server in the background", "end_turn")
	d.promptExpect(other, "read and stop task bash-1", "end_turn")
	d.closeAndWait()
	noSurvivors(t, marker)
	return map[string][]byte{"cross_session_owner": d.journalBytes(owner), "cross_session_other": d.journalBytes(other)}
}

func recordMalformed(t *testing.T) map[string][]byte {
	marker := acptest.NewMarker()
	d, _ := startScripted(t, marker,
		llmtest.Calls(
			llmtest.Call{ID: "call_bad_json", Name: "bash", Args: `{"command":"ls`},
			llmtest.Call{ID: "call_bad_type", Name: "bash", Args: `{"command":"sleep 1","description":"Wait","timeoutMs":"5s"}`},
			llmtest.Call{ID: "call_not_object", Name: "bash", Args: `["ls","-la"]`},
			llmtest.Call{ID: "call_unknown_tool", Name: "python", Args: `{"code":"print(1)"}`},
			llmtest.Call{ID: "call_missing_arg", Name: "bash_output", Args: `{"id":"bash-1"}`}),
		llmtest.Reply("Those calls were malformed."))
	sid := d.newSession(t.TempDir())
	d.promptExpect(sid, "make some broken calls", "end_turn")
	d.closeAndWait()
	noSurvivors(t, marker)
	return map[string][]byte{"malformed_args": d.journalBytes(sid)}
}

func recordInterruptedDirect(t *testing.T) map[string][]byte {
	marker := acptest.NewMarker()
	d := startDaemon(t, acptest.ZedCapabilities(), nil, "ACPTEST_MARKER="+marker)
	sid := d.newSession(t.TempDir())
	d.promptExpect(sid, "!echo first", "end_turn")
	d.promptInBackground(sid, "!echo partial; sleep 600")
	d.waitToolCall(sid, "sleep 600")
	waitMarkedProcs(t, marker, 1, d.Pid())
	d.sigkill()
	killMarkedGroups(t, marker)
	return map[string][]byte{"interrupted_direct": d.journalBytes(sid)}
}

func recordInterruptedModel(t *testing.T) map[string][]byte {
	marker := acptest.NewMarker()
	d, _ := startScripted(t, marker,
		thinkingFirst(llmtest.Calls(
			llmtest.Call{ID: "call_int_run", Name: "bash", Args: `{"command":"sleep 600","description":"Wait for the deploy"}`},
			llmtest.Call{ID: "call_int_next", Name: "bash", Args: `{"command":"echo deployed","description":"Report"}`}),
			"Wait for the deploy, then report."))
	sid := d.newSession(t.TempDir())
	d.promptInBackground(sid, "wait for the deploy and report")
	d.waitToolCall(sid, "call_int_run")
	waitMarkedProcs(t, marker, 1, d.Pid())
	d.sigkill()
	killMarkedGroups(t, marker)
	return map[string][]byte{"interrupted_model": d.journalBytes(sid)}
}

// writeHandwritten writes, with package replay, the logged arguments no live
// run records: arguments that are not JSON (the daemon wraps those in a
// string), not UTF-8, JSON with insignificant white space, and a tool this
// build does not know.
func writeHandwritten(t *testing.T) map[string][]byte {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	store, err := replay.OpenStore(t.TempDir(), replay.WithClock(func() time.Time {
		now = now.Add(time.Millisecond)
		return now
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	const id = "20260102T030405.000000Z-0000000000000001"
	j, err := store.Create(id, "/home/user/project", handwrittenVersion)
	if err != nil {
		t.Fatal(err)
	}
	code := 0
	calls := []struct {
		id, name, args string
		res            event.Result
	}{
		{"call_text_args", "bash", `{"command": "ls",`, event.Result{IsError: true, Text: "the arguments of this bash call are not a JSON object: {\"command\": \"ls\",\nCall the tool again with a JSON object that matches its schema."}},
		{"call_byte_args", "bash", "\xff\xfe{\"command\":\"ls\"}", event.Result{IsError: true, Text: "the arguments of this bash call are not a JSON object: \ufffd\ufffd{\"command\":\"ls\"}\nCall the tool again with a JSON object that matches its schema."}},
		{"call_spaced_args", "bash", `{"command": "echo spaced", "description": "Spaced arguments"}`, tools.WithOutcome(event.Result{Text: "spaced", CardOutput: "spaced\n"}, tools.Outcome{ExitCode: &code, TimeoutMs: 120000})},
		{"call_future_tool", "fetch_url", `{"url":"https://example.com"}`, event.Result{Text: "fetched 1256 bytes"}},
		{"call_blank_name", "", `{}`, event.Result{IsError: true, Text: `unknown tool ""; the tools you can call are: bash, bash_output, bash_kill`}},
	}
	msg := event.AssistantMessage{Text: "Trying some odd calls."}
	for _, c := range calls {
		msg.ToolCalls = append(msg.ToolCalls, event.CallInfo{ID: c.id, Name: c.name, Args: json.RawMessage(c.args)})
	}
	events := []event.Event{event.UserPrompt{Text: "replay these odd calls"}, msg}
	for _, c := range calls {
		args := json.RawMessage(c.args)
		events = append(events, event.ToolCall{ID: c.id, Name: c.name, Args: args},
			event.ToolResult{ID: c.id, Name: c.name, Args: args, Result: c.res})
	}
	events = append(events, event.AssistantMessage{Text: "Done."}, event.TurnEnd{StopReason: event.EndTurn})
	for _, ev := range events {
		if err := j.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	path, err := store.Path(id)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{"handwritten_args": b}
}

// --- journal shape predicates ---

func exitCodeIs(r event.Result, code int) bool {
	return tools.OutcomeOf(r).ExitCode != nil && *tools.OutcomeOf(r).ExitCode == code
}

func allOf(checks ...func(*replay.Loaded) error) func(*replay.Loaded) error {
	return func(l *replay.Loaded) error {
		var errs []error
		for _, c := range checks {
			errs = append(errs, c(l))
		}
		return errors.Join(errs...)
	}
}

func journalHas(what string, pred func(event.Event) bool) func(*replay.Loaded) error {
	return func(l *replay.Loaded) error {
		if slices.ContainsFunc(l.Events, pred) {
			return nil
		}
		return fmt.Errorf("no %s", what)
	}
}

func journalHasResult(what string, pred func(event.ToolResult) bool) func(*replay.Loaded) error {
	return journalHas(what, func(ev event.Event) bool {
		r, ok := ev.(event.ToolResult)
		return ok && pred(r)
	})
}

// endsUnsettled checks that the journal ends with started calls that have no
// result and calls the model asked for that never started.
func endsUnsettled(started, notStarted int) func(*replay.Loaded) error {
	return func(l *replay.Loaded) error {
		asked, opened, done := map[string]bool{}, map[string]bool{}, map[string]bool{}
		for _, ev := range l.Events {
			switch e := ev.(type) {
			case event.AssistantMessage:
				for _, c := range e.ToolCalls {
					asked[c.ID] = true
				}
			case event.ToolCall:
				opened[e.ID] = true
			case event.ToolResult:
				done[e.ID] = true
			}
		}
		s, n := 0, 0
		for id := range opened {
			if !done[id] {
				s++
			}
		}
		for id := range asked {
			if !opened[id] {
				n++
			}
		}
		if s != started || n != notStarted {
			return fmt.Errorf("%d started calls without a result and %d calls never started; want %d and %d", s, n, started, notStarted)
		}
		return nil
	}
}

// --- normalisation of volatile values ---

var rfc3339RE = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)

// journalNormalizer replaces the volatile values of a recorded journal's replay:
// its recording's session directory ($CWD), state directory ($STATE, from
// its spill paths) and timestamps ($TIME). Ids are kept as recorded.
func journalNormalizer(l *replay.Loaded) func(string) string {
	pairs := map[string]string{}
	if l.Header.Cwd != "" {
		pairs[l.Header.Cwd] = "$CWD"
	}
	for _, ev := range l.Events {
		if r, ok := ev.(event.ToolResult); ok {
			if i := strings.Index(tools.OutcomeOf(r.Result).SpillPath, "/spill/"); i > 0 {
				pairs[tools.OutcomeOf(r.Result).SpillPath[:i]] = "$STATE"
			}
		}
	}
	olds := make([]string, 0, len(pairs))
	for old := range pairs {
		olds = append(olds, old)
	}
	slices.SortFunc(olds, func(a, b string) int { return len(b) - len(a) }) // longest first
	var args []string
	for _, old := range olds {
		args = append(args, old, pairs[old])
	}
	r := strings.NewReplacer(args...)
	return func(s string) string { return rfc3339RE.ReplaceAllString(r.Replace(s), "$$TIME") }
}

// compareGolden compares got with the golden file, or writes it under -update.
func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./acp -run %s -update to create it)", err, t.Name())
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file (check, then rerun with -update):\n%s", path, firstLineDiff(string(want), string(got)))
	}
}

// firstLineDiff shows the first differing lines of two texts.
func firstLineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n  want %q\n  got  %q", i+1, wl, gl)
		}
	}
	return "(no line differs)"
}

// taskIs reports whether r names a task with this status (and this id,
// unless id is empty).
func taskIs(r event.Result, id, status string) bool {
	return r.Task != nil && (id == "" || r.Task.ID == id) && r.Task.Status == status
}

// writeV2Twins writes testdata/sessions/v2/NAME.jsonl for every version 1
// journal: the same header, events and state records written again by the
// journal of today (format v2), and a torn last line kept as it was.
func writeV2Twins(t *testing.T) {
	t.Helper()
	out := filepath.Join(sessionsDir, "v2")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range journalCases() {
		src := filepath.Join(sessionsDir, c.name+".jsonl")
		l, err := replay.LoadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		state := t.TempDir()
		store, err := replay.OpenStore(state, replay.WithClock(func() time.Time { return l.Header.Created }))
		if err != nil {
			t.Fatal(err)
		}
		j, err := store.Create(l.Header.ID, l.Header.Cwd, l.Header.DaemonVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range l.Events {
			if err := j.Append(ev); err != nil {
				t.Fatal(err)
			}
		}
		for _, key := range slices.Sorted(maps.Keys(l.State)) {
			if err := j.AppendState(key, l.State[key]); err != nil {
				t.Fatal(err)
			}
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		path, _ := store.Path(l.Header.ID)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if c.torn {
			raw, _ := os.ReadFile(src)
			b = append(b, raw[bytes.LastIndexByte(raw, '\n')+1:]...)
		}
		if err := os.WriteFile(filepath.Join(out, c.name+".jsonl"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		store.Close()
	}
}
