package presentation_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/executorfake"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/presentation"
	"github.com/dsh-acp/dsh-acp/tools"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const (
	sessionID  = "sess-1"
	sessionCwd = "/home/user/project"
	callID     = "call_1"
)

// scriptedExec answers every executor call with scripted values.
type scriptedExec struct {
	chunks  []executor.Chunk
	result  executor.Result
	runErr  error
	startID string
	readRes executor.ReadResult
	readErr error
	killRes executor.KillResult
	killErr error
}

// fake is the shared fake executor answering as the script says.
func (s *scriptedExec) fake() *executorfake.Executor {
	f := executorfake.New()
	f.Chunks, f.Result, f.RunErr = s.chunks, s.result, s.runErr
	f.StartFunc = func(executor.Spec) (string, error) { return s.startID, nil }
	f.ReadFunc = func(string, string) (executor.ReadResult, error) { return s.readRes, s.readErr }
	f.KillFunc = func(string, string) (executor.KillResult, error) { return s.killRes, s.killErr }
	return f
}

func out(stream executor.Stream, data string) executor.Chunk {
	return executor.Chunk{Stream: stream, Data: []byte(data)}
}
func stdout(data string) executor.Chunk                    { return out(executor.Stdout, data) }
func stderr(data string) executor.Chunk                    { return out(executor.Stderr, data) }
func withDropped(c executor.Chunk, n int64) executor.Chunk { c.Dropped = n; return c }

// scenario is one tool call: run for real over a scripted executor, or (for
// calls that never run) a recorded result.
type scenario struct {
	name string
	tool string
	args string
	cfg  tools.Config
	ex   *scriptedExec
	res  *event.Result // the recorded result of a call that did not run
}

func scenarios() []scenario {
	big := strings.Repeat("compiling module …\n", 40)
	return []scenario{
		{
			name: "foreground_exit0", tool: "bash",
			args: `{"command":"ls -la src","description":"List source files","workdir":"src"}`,
			ex: &scriptedExec{
				chunks: []executor.Chunk{stdout("total 8\n"), stdout("-rw-r--r-- 1 u u 42 main.go\n")},
				result: executor.Result{Stdout: []byte("total 8\n-rw-r--r-- 1 u u 42 main.go\n")},
			},
		},
		{
			name: "foreground_exit1", tool: "bash",
			args: `{"command":"go test ./...","description":"Run the tests"}`,
			ex: &scriptedExec{
				chunks: []executor.Chunk{
					stdout("\x1b[31m--- FAIL: TestParse\x1b[0m\n"),
					stderr("parse_test.go:12: want 3, got 4\n"),
					stdout("FAIL\n"),
				},
				result: executor.Result{
					Stdout:   []byte("\x1b[31m--- FAIL: TestParse\x1b[0m\nFAIL\n"),
					Stderr:   []byte("parse_test.go:12: want 3, got 4\n"),
					ExitCode: 1,
				},
			},
		},
		{
			name: "foreground_no_output", tool: "bash",
			args: `{"command":"true","description":"Do nothing"}`,
			ex:   &scriptedExec{},
		},
		{
			name: "foreground_timeout", tool: "bash",
			args: `{"command":"npm install","description":"Install dependencies","timeoutMs":1000}`,
			ex: &scriptedExec{
				chunks: []executor.Chunk{stdout("fetching packages\r"), stdout("fetching packages 40%\r")},
				result: executor.Result{Stdout: []byte("fetching packages\rfetching packages 40%\r"),
					TimedOut: true, Signal: "SIGTERM", ExitCode: -1},
			},
		},
		{
			name: "foreground_signal", tool: "bash",
			args: `{"command":"./build.sh","description":"Build everything","workdir":"/opt/app"}`,
			ex: &scriptedExec{
				chunks: []executor.Chunk{stdout("step 1\n")},
				result: executor.Result{Stdout: []byte("step 1\n"), Signal: "SIGKILL", ExitCode: -1},
			},
		},
		{
			name: "foreground_truncated", tool: "bash",
			args: `{"command":"make","description":"Build"}`,
			cfg:  tools.Config{OutputLimit: 200, CardOutputLimit: 120},
			ex: &scriptedExec{
				chunks: []executor.Chunk{stdout(big[:300]), withDropped(stdout(big[300:]), 5000)},
				result: executor.Result{Stdout: []byte(big), Combined: []byte(big), Dropped: 5000, SpillPath: "/tmp/dsh-acp/spill/call_1.log"},
			},
		},
		{
			name: "foreground_backticks", tool: "bash",
			args: "{\"command\":\"cat README.md\",\"description\":\"Show the readme\"}",
			ex: &scriptedExec{
				chunks: []executor.Chunk{stdout("# Demo\n```sh\nmake\n```\n")},
				result: executor.Result{Stdout: []byte("# Demo\n```sh\nmake\n```\n")},
			},
		},
		{
			name: "foreground_spawn_error", tool: "bash",
			args: `{"command":"ls","description":"List","workdir":"missing"}`,
			ex: &scriptedExec{runErr: fmt.Errorf("%w: /home/user/project/missing: no such file or directory",
				executor.ErrWorkdir)},
		},
		{
			name: "malformed_args", tool: "bash",
			args: `{"command":"sleep 5","timeoutMs":"5s"}`,
			ex:   &scriptedExec{},
		},
		{
			name: "invalid_json", tool: "bash",
			args: `{"command":"ls`,
			ex:   &scriptedExec{},
		},
		{
			name: "foreground_spawn_failure", tool: "bash",
			args: `{"command":"make","description":"Build"}`,
			ex:   &scriptedExec{runErr: errors.New("fork/exec /bin/bash: resource temporarily unavailable")},
		},
		{
			name: "declined", tool: "bash",
			args: `{"command":"rm -rf build","description":"Remove the build directory"}`,
			res: &event.Result{Text: "The user declined to run this command. Do not retry it; ask the user how to proceed.",
				IsError: true, Declined: "declined by the user"},
		},
		{
			name: "denied_read_only", tool: "bash",
			args: `{"command":"touch notes.txt","description":"Create the notes file"}`,
			res: &event.Result{Text: "Not run: denied in read-only mode, which runs only read-only commands: touch notes.txt: touch is not on the read-only list (permission mode \"read-only\"). Do not retry it in another form; ask the user if it is needed.",
				IsError: true, Declined: "denied in read-only mode, which runs only read-only commands: touch notes.txt: touch is not on the read-only list"},
		},
		{
			// As the loop records a call the user's cancel interrupted:
			// the run's own result, marked (agent.cancelledResult).
			name: "cancelled_running", tool: "bash",
			args: `{"command":"npm test","description":"Run the tests"}`,
			res: func() *event.Result {
				r := tools.WithOutcome(event.Result{
					Text:       "started\n[killed by signal: SIGTERM]\n[cancelled: the user stopped the turn while this call ran]",
					IsError:    true,
					CardOutput: "started\n",
				}, tools.Outcome{Signal: "SIGTERM", TimeoutMs: 120000})
				return &r
			}(),
		},
		{
			name: "cancelled_before", tool: "bash",
			args: `{"command":"npm test","description":"Run the tests"}`,
			res:  &event.Result{Text: "cancelled: the user stopped the turn before this call ran", IsError: true},
		},
		{
			// As the settler closes a call a crash interrupted
			// (replay.InterruptedText).
			name: "interrupted", tool: "bash",
			args: `{"command":"npm test","description":"Run the tests"}`,
			res:  &event.Result{Text: "interrupted: the daemon stopped while this command ran", IsError: true},
		},
		{
			name: "background_start", tool: "bash",
			args: `{"command":"npm run dev","description":"Start the dev server","run_in_background":true}`,
			ex:   &scriptedExec{startID: "bash-3"},
		},
		{
			name: "bash_output_running", tool: "bash_output",
			args: `{"task_id":"bash-3"}`,
			ex: &scriptedExec{readRes: executor.ReadResult{ID: "bash-3", Status: executor.Running,
				Output: []byte("\x1b[32m➜\x1b[0m Local: http://localhost:5173/\n")}},
		},
		{
			name: "bash_output_completed_lost", tool: "bash_output",
			args: `{"task_id":"bash-3"}`,
			ex: &scriptedExec{readRes: executor.ReadResult{ID: "bash-3", Status: executor.Completed, ExitCode: 2,
				Output: []byte("error: build failed\n"), Lost: 65536, SpillPath: "/tmp/dsh-acp/spill/bash-3.log"}},
		},
		{
			name: "bash_output_other_session", tool: "bash_output",
			args: `{"task_id":"bash-3"}`,
			ex:   &scriptedExec{readErr: &executor.OwnerError{ID: "bash-3"}},
		},
		{
			name: "bash_kill", tool: "bash_kill",
			args: `{"task_id":"bash-3"}`,
			ex:   &scriptedExec{killRes: executor.KillResult{ID: "bash-3", Status: executor.Killed, Signal: "SIGTERM", ExitCode: -1}},
		},
		{
			name: "bash_kill_finished", tool: "bash_kill",
			args: `{"task_id":"bash-3"}`,
			ex:   &scriptedExec{killRes: executor.KillResult{ID: "bash-3", AlreadyFinished: true, Status: executor.Completed}},
		},
		{
			name: "todo_write", tool: "todo_write",
			args: `{"todos":[{"content":"Read the failing test","status":"completed"},{"content":"Fix the parser","status":"in_progress"},{"content":"Run the tests","status":"pending"}]}`,
		},
		{
			name: "todo_write_duplicate", tool: "todo_write",
			args: `{"todos":[{"content":"Fix it","status":"pending"},{"content":"Fix it","status":"completed"}]}`,
		},
		{
			name: "unknown_tool", tool: "python",
			args: `{"code":"print(1)"}`,
			res:  &event.Result{Text: "unknown tool \"python\"", IsError: true},
		},
	}
}

// golden is one scenario's whole story, as the golden file records it.
type golden struct {
	Tool         string              `json:"tool"`
	Args         string              `json:"args"`               // as the model sent them (maybe not JSON)
	Streamed     []string            `json:"streamed,omitempty"` // Call.Output pieces, in order
	Result       event.Result        `json:"result"`
	CallIntent   tools.CallIntent    `json:"callIntent"`
	ResultIntent tools.ResultIntent  `json:"resultIntent"`
	Wire         map[string][]wireUp `json:"wire"`
}

type wireUp = json.RawMessage

// play runs a scenario and builds its golden record.
func play(t *testing.T, sc scenario) golden {
	t.Helper()
	ex := sc.ex
	if ex == nil {
		ex = &scriptedExec{}
	}
	set := tools.NewBuiltin(ex.fake(), sc.cfg)
	g := golden{Tool: sc.tool, Args: sc.args}
	if sc.res != nil {
		g.Result = *sc.res
	} else {
		tool, ok := set.Lookup(sc.tool)
		if !ok {
			t.Fatalf("no tool %q", sc.tool)
		}
		g.Result = tool.Run(context.Background(), tools.Call{
			ID: callID, Args: json.RawMessage(sc.args),
			Session: tools.Session{ID: sessionID, Cwd: sessionCwd},
			Output:  func(s string) { g.Streamed = append(g.Streamed, s) },
		})
	}
	journaled := roundTrip(t, g.Result) // what a replay reads back
	g.CallIntent = set.PresentCall(sc.tool, json.RawMessage(sc.args))
	g.ResultIntent = set.PresentResult(sc.tool, json.RawMessage(sc.args), journaled)

	term, plain := presentation.Caps{Terminal: true}, presentation.Caps{}
	live := []acp.SessionUpdate{presentation.OpenCard(callID, g.CallIntent, sessionCwd, term)}
	for _, s := range g.Streamed {
		if u, ok := presentation.CardOutput(callID, s, term); ok {
			live = append(live, u)
		}
	}
	live = append(live, presentation.CloseCard(callID, g.CallIntent, g.ResultIntent, term, len(g.Streamed) > 0)...)
	fallback := []acp.SessionUpdate{presentation.OpenCard(callID, g.CallIntent, sessionCwd, plain)}
	for _, s := range g.Streamed {
		if _, ok := presentation.CardOutput(callID, s, plain); ok {
			t.Errorf("CardOutput without the terminal capability produced an update")
		}
	}
	fallback = append(fallback, presentation.CloseCard(callID, g.CallIntent, g.ResultIntent, plain, len(g.Streamed) > 0)...)
	g.Wire = map[string][]wireUp{
		"terminal_live":   marshalAll(t, live),
		"terminal_replay": marshalAll(t, presentation.Replay(callID, g.CallIntent, g.ResultIntent, sessionCwd, term)),
		"fallback":        marshalAll(t, fallback),
	}
	return g
}

func roundTrip(t *testing.T, r event.Result) event.Result {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back event.Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	return back
}

// marshalAll renders updates as the session/update params the client reads.
func marshalAll(t *testing.T, ups []acp.SessionUpdate) []wireUp {
	t.Helper()
	var out []wireUp
	for _, u := range ups {
		b, err := json.Marshal(acp.SessionNotification{SessionId: sessionID, Update: u})
		if err != nil {
			t.Fatalf("marshal update: %v", err)
		}
		out = append(out, b)
	}
	return out
}

func TestGolden(t *testing.T) {
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			g := play(t, sc)
			got, err := json.MarshalIndent(g, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", sc.name+".json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./presentation -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the golden file (run with -update after checking):\n%s", path, got)
			}
		})
	}
}
