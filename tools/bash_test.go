package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/executorfake"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/tools"
)

var session = tools.Session{ID: "sess-A", Cwd: "/home/u/project"}

// call runs the named tool of a fresh Set over ex.
func call(t *testing.T, ex executor.Executor, cfg tools.Config, name, args string, out func(string)) event.Result {
	t.Helper()
	tool, ok := tools.NewBash(ex, cfg).Lookup(name)
	if !ok {
		t.Fatalf("no tool %q", name)
	}
	return tool.Run(context.Background(), tools.Call{ID: "call_1", Args: json.RawMessage(args), Session: session, Output: out})
}

func TestBashRequestCarriesNamedArgsOnly(t *testing.T) {
	ex := executorfake.New()
	args := `{"command":"echo hi","description":"Say hi","env":{"SECRET":"x","PATH":"/evil"},"stdin":"payload","Env":{"A":"b"},"Stdin":"x"}`
	res := call(t, ex, tools.Config{}, "bash", args, nil)
	if res.IsError {
		t.Fatalf("unexpected error result: %q", res.Text)
	}
	c := ex.Calls()
	reqs, runs, _ := c.Requests, c.Runs, c.Starts
	if len(reqs) != 1 || len(runs) != 1 {
		t.Fatalf("got %d requests and %d runs, want 1 and 1", len(reqs), len(runs))
	}
	if reqs[0].Env != nil || reqs[0].Stdin != nil {
		t.Errorf("request carries model input: env=%v stdin=%q", reqs[0].Env, reqs[0].Stdin)
	}
	if runs[0].Env != nil || runs[0].Stdin != nil {
		t.Errorf("spec carries model input: env=%v stdin=%q", runs[0].Env, runs[0].Stdin)
	}
}

func TestBashRequest(t *testing.T) {
	tests := []struct {
		name        string
		args        string
		session     tools.Session
		wantReq     executor.Request
		wantWorkdir string // resolved
		wantTimeout time.Duration
	}{
		{
			name:        "workdir defaults to the session cwd",
			args:        `{"command":"ls","description":"List"}`,
			session:     session,
			wantReq:     executor.Request{Command: "ls", Workdir: session.Cwd, SessionCwd: session.Cwd, Owner: "sess-A"},
			wantWorkdir: session.Cwd,
			wantTimeout: executorfake.DefaultTimeout,
		},
		{
			name:        "relative workdir is left for Resolve against the session cwd",
			args:        `{"command":"ls","description":"List","workdir":"src/pkg"}`,
			session:     session,
			wantReq:     executor.Request{Command: "ls", Workdir: "src/pkg", SessionCwd: session.Cwd, Owner: "sess-A"},
			wantWorkdir: "/home/u/project/src/pkg",
			wantTimeout: executorfake.DefaultTimeout,
		},
		{
			name:        "absolute workdir and timeout",
			args:        `{"command":"ls","description":"List","workdir":"/tmp","timeoutMs":1500.7}`,
			session:     session,
			wantReq:     executor.Request{Command: "ls", Workdir: "/tmp", SessionCwd: session.Cwd, Owner: "sess-A", Timeout: 1500 * time.Millisecond},
			wantWorkdir: "/tmp",
			wantTimeout: 1500 * time.Millisecond,
		},
		{
			name:        "non-session caller falls back to the executor default",
			args:        `{"command":"ls","description":"List","timeoutMs":null,"workdir":null}`,
			wantReq:     executor.Request{Command: "ls"},
			wantWorkdir: executorfake.DefaultWorkdir,
			wantTimeout: executorfake.DefaultTimeout,
		},
		{
			name:        "huge timeout is clamped by the executor",
			args:        `{"command":"ls","description":"List","timeoutMs":1e300}`,
			session:     session,
			wantReq:     executor.Request{Command: "ls", Workdir: session.Cwd, SessionCwd: session.Cwd, Owner: "sess-A", Timeout: time.Duration(1<<63 - 1).Truncate(time.Millisecond)},
			wantWorkdir: session.Cwd,
			wantTimeout: executorfake.MaxTimeout,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex := executorfake.New()
			tool, _ := tools.NewBash(ex, tools.Config{}).Lookup("bash")
			res := tool.Run(context.Background(), tools.Call{Args: json.RawMessage(tt.args), Session: tt.session})
			if res.IsError {
				t.Fatalf("error result: %q", res.Text)
			}
			c := ex.Calls()
			reqs, runs, _ := c.Requests, c.Runs, c.Starts
			if fmt.Sprint(reqs[0]) != fmt.Sprint(tt.wantReq) {
				t.Errorf("request = %+v\nwant      %+v", reqs[0], tt.wantReq)
			}
			if runs[0].Workdir != tt.wantWorkdir || runs[0].Timeout != tt.wantTimeout {
				t.Errorf("spec workdir %q timeout %v, want %q %v", runs[0].Workdir, runs[0].Timeout, tt.wantWorkdir, tt.wantTimeout)
			}
			if tools.OutcomeOf(res).TimeoutMs != tt.wantTimeout.Milliseconds() {
				t.Errorf("TimeoutMs = %d, want %d", tools.OutcomeOf(res).TimeoutMs, tt.wantTimeout.Milliseconds())
			}
		})
	}
}

func TestBadArguments(t *testing.T) {
	tests := []struct {
		tool, args, want string
	}{
		{"bash", `{"command":"ls","description":"x","timeoutMs":"5000"}`, `"timeoutMs" must be a number, got a string`},
		{"bash", `{"description":"x"}`, `missing required field "command"`},
		{"bash", `{"command":null}`, `missing required field "command"`},
		{"bash", `{"command":"  "}`, `"command" must not be empty`},
		{"bash", `{"command":42}`, `"command" must be a string, got a number`},
		{"bash", `{"command":"ls","description":["x"]}`, `"description" must be a string, got an array`},
		{"bash", `{"command":"ls","workdir":{}}`, `"workdir" must be a string, got an object`},
		{"bash", `{"command":"ls","run_in_background":"yes"}`, `"run_in_background" must be a boolean, got a string`},
		{"bash", `{"command":"ls","timeoutMs":-1}`, `"timeoutMs" must not be negative`},
		{"bash", `{"command":"ls","timeoutMs":1e400}`, `"timeoutMs" must be a number`},
		{"bash", `{"command":"ls"`, `not valid JSON`},
		{"bash", `["ls"]`, `expected a JSON object, got an array`},
		{"bash", ``, `missing required field "command"`},
		{"bash_output", `{}`, `missing required field "task_id"`},
		{"bash_output", `{"task_id":3}`, `"task_id" must be a string, got a number`},
		{"bash_kill", `"bash-1"`, `expected a JSON object, got a string`},
		{"bash_kill", `{"task_id":""}`, `"task_id" must not be empty`},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.args, func(t *testing.T) {
			ex := executorfake.New()
			res := call(t, ex, tools.Config{}, tt.tool, tt.args, nil)
			if !res.IsError || !strings.Contains(res.Text, tt.want) {
				t.Errorf("got %+v, want an error result containing %q", res, tt.want)
			}
			c := ex.Calls()
			reqs, runs, starts := c.Requests, c.Runs, c.Starts
			if len(reqs)+len(runs)+len(starts)+len(ex.Calls().Reads)+len(ex.Calls().Kills) != 0 {
				t.Errorf("the executor was called for bad arguments")
			}
		})
	}
}

func intp(n int) *int { return &n }

func TestBashResultText(t *testing.T) {
	tests := []struct {
		name      string
		cfg       tools.Config
		res       executor.Result
		want      string
		truncated bool
		exitCode  *int
	}{
		{name: "stdout", res: executor.Result{Stdout: []byte("a\nb\n")}, want: "a\nb", exitCode: intp(0)},
		{name: "no output", res: executor.Result{}, want: "(no output)", exitCode: intp(0)},
		{
			name:     "stderr section and exit code",
			res:      executor.Result{Stdout: []byte("out\n"), Stderr: []byte("boom\n"), ExitCode: 2},
			want:     "out\n[stderr]\nboom\n[exit code: 2]",
			exitCode: intp(2),
		},
		{
			name:     "only stderr",
			res:      executor.Result{Stderr: []byte("warn"), ExitCode: 0},
			want:     "[stderr]\nwarn",
			exitCode: intp(0),
		},
		{
			name:     "non-zero exit without output",
			res:      executor.Result{ExitCode: 1},
			want:     "[exit code: 1]",
			exitCode: intp(1),
		},
		{
			name:     "timed out but trapped TERM and exited 0",
			res:      executor.Result{Stdout: []byte("partial"), TimedOut: true},
			want:     "partial\n[timed out after 120000ms]",
			exitCode: intp(0),
		},
		{
			name: "timed out and killed",
			res:  executor.Result{Stdout: []byte("partial\n"), TimedOut: true, Signal: "SIGKILL", ExitCode: -1},
			want: "partial\n[timed out after 120000ms]\n[killed by signal: SIGKILL]",
		},
		{
			name:      "executor truncated with a spill file",
			res:       executor.Result{Stdout: []byte("tail\n"), Dropped: 10, SpillPath: "/tmp/spill/bash-x.log", ExitCode: 3},
			want:      "tail\n[exit code: 3]\n[output truncated; full output: /tmp/spill/bash-x.log]",
			truncated: true,
			exitCode:  intp(3),
		},
		{
			name:      "executor truncated without a spill file",
			res:       executor.Result{Stdout: []byte("tail\n"), Dropped: 10},
			want:      "tail\n[output truncated; full output: (unavailable)]",
			truncated: true,
			exitCode:  intp(0),
		},
		{
			name:      "executor could not save the full output",
			res:       executor.Result{Stdout: []byte("tail\n"), Dropped: 10, SpillError: "no space left on device"},
			want:      "tail\n[output truncated; full output: (unavailable)]\n[the full output could not be saved: no space left on device]",
			truncated: true,
			exitCode:  intp(0),
		},
		{
			name:     "process limit reached",
			res:      executor.Result{Stderr: []byte("fork: retry: Resource temporarily unavailable"), LimitHit: "pids"},
			want:     "[stderr]\nfork: retry: Resource temporarily unavailable\n[process limit reached: the command could not start more processes]",
			exitCode: intp(0),
		},
		{
			name:     "ANSI escapes and carriage-return redraws",
			res:      executor.Result{Stdout: []byte("\x1b[1;32mok\x1b[0m\r\n10%\r50%\r100%\n\x1b]0;title\x07done\n")},
			want:     "ok\n100%\ndone",
			exitCode: intp(0),
		},
		{
			name:      "model cap with no spill saved: the contract's marker, then the reason",
			cfg:       tools.Config{OutputLimit: 140},
			res:       executor.Result{Stdout: []byte(strings.Repeat("x", 200) + "END"), SpillError: "no space left on device"},
			want:      "[… 199 characters omitted]\nxEND\n[output truncated; full output: (unavailable)]\n[the full output could not be saved: no space left on device]",
			truncated: true,
			exitCode:  intp(0),
		},
		{
			name:      "model cap keeps the tail",
			cfg:       tools.Config{OutputLimit: 100},
			res:       executor.Result{Stdout: []byte(strings.Repeat("x", 200) + "END"), ExitCode: 1},
			want:      "[… 192 characters omitted]\n" + strings.Repeat("x", 8) + "END\n[exit code: 1]\n[output truncated; full output: (unavailable)]",
			truncated: true,
			exitCode:  intp(1),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex := executorfake.New()
			ex.Result = tt.res
			res := call(t, ex, tt.cfg, "bash", `{"command":"make","description":"Build"}`, nil)
			if res.IsError {
				t.Fatalf("error result for a finished run: %q", res.Text)
			}
			if res.Text != tt.want {
				t.Errorf("text = %q\nwant   %q", res.Text, tt.want)
			}
			if tools.OutcomeOf(res).Truncated != tt.truncated {
				t.Errorf("Truncated = %v, want %v", tools.OutcomeOf(res).Truncated, tt.truncated)
			}
			if fmt.Sprint(deref(tools.OutcomeOf(res).ExitCode)) != fmt.Sprint(deref(tt.exitCode)) {
				t.Errorf("ExitCode = %v, want %v", deref(tools.OutcomeOf(res).ExitCode), deref(tt.exitCode))
			}
			if tools.OutcomeOf(res).Signal != tt.res.Signal || tools.OutcomeOf(res).TimedOut != tt.res.TimedOut || tools.OutcomeOf(res).SpillPath != tt.res.SpillPath ||
				tools.OutcomeOf(res).SpillError != tt.res.SpillError || tools.OutcomeOf(res).LimitHit != tt.res.LimitHit {
				t.Errorf("structured fields %+v do not match %+v", res, tt.res)
			}
		})
	}
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestBashCapKeepsValidUTF8AndMarkers(t *testing.T) {
	const limit = 500
	big := strings.Repeat("héllo wörld ✓ ", 400) // multibyte throughout
	ex := executorfake.New()
	ex.Result = executor.Result{
		Stdout: []byte(big + "LAST-OUT"), Stderr: []byte(big + "LAST-ERR"), ExitCode: 7,
		SpillPath: "/spill/f", Dropped: 1,
	}
	res := call(t, ex, tools.Config{OutputLimit: limit}, "bash", `{"command":"x","description":"y"}`, nil)
	if n := utf8.RuneCountInString(res.Text); n > limit {
		t.Errorf("text has %d runes, cap is %d", n, limit)
	}
	if !utf8.ValidString(res.Text) {
		t.Error("text is not valid UTF-8")
	}
	for _, want := range []string{"LAST-OUT\n[stderr]\n", "LAST-ERR\n[exit code: 7]\n[output truncated; full output: /spill/f]"} {
		if !strings.Contains(res.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, res.Text)
		}
	}
	if strings.Count(res.Text, "characters omitted]") != 2 {
		t.Errorf("want an omission notice per stream:\n%s", res.Text)
	}
}

func TestBashCardOutput(t *testing.T) {
	euro := []byte("€") // 3 bytes
	tests := []struct {
		name     string
		limit    int
		spill    string
		spillErr string
		chunks   []executor.Chunk
		want     string
	}{
		{
			name:   "raw, ANSI kept",
			chunks: []executor.Chunk{{Stream: executor.Stdout, Data: []byte("\x1b[31mred\x1b[0m\r\n")}},
			want:   "\x1b[31mred\x1b[0m\r\n",
		},
		{
			name: "a character split across chunks is carried",
			chunks: []executor.Chunk{
				{Stream: executor.Stdout, Data: append([]byte("a"), euro[:1]...)},
				{Stream: executor.Stderr, Data: []byte("E")},
				{Stream: executor.Stdout, Data: append(euro[1:], 'b')},
			},
			want: "aE€b",
		},
		{
			name:   "an incomplete character at the end becomes U+FFFD",
			chunks: []executor.Chunk{{Stream: executor.Stdout, Data: append([]byte("x"), euro[:2]...)}},
			want:   "x\uFFFD",
		},
		{
			name:   "invalid bytes become U+FFFD",
			chunks: []executor.Chunk{{Stream: executor.Stdout, Data: []byte("a\xffb\n")}},
			want:   "a\uFFFDb\n",
		},
		{
			name: "dropped bytes are reported on a line",
			chunks: []executor.Chunk{
				{Stream: executor.Stdout, Data: []byte("one")},
				{Stream: executor.Stdout, Data: []byte("two\n"), Dropped: 4096},
			},
			want: "one\n[… 4096 bytes dropped]\ntwo\n",
		},
		{
			name:  "cap on a character boundary, the rest counted",
			limit: 5,
			chunks: []executor.Chunk{
				{Stream: executor.Stdout, Data: []byte("abc€def")}, // € would straddle byte 5
				{Stream: executor.Stdout, Data: []byte("ghij")},
				{Stream: executor.Stdout, Data: []byte("k"), Dropped: 10},
			},
			want: "abc\n[… 21 bytes not shown]\n",
		},
		{
			name:   "the not-shown line names the full output file",
			limit:  2,
			spill:  "/spill/x.log",
			chunks: []executor.Chunk{{Stream: executor.Stdout, Data: []byte("abc\n")}},
			want:   "ab\n[… 2 bytes not shown; full output: /spill/x.log]\n",
		},
		{
			name:     "the not-shown line says the full output could not be saved",
			limit:    2,
			spillErr: "no space left on device",
			chunks:   []executor.Chunk{{Stream: executor.Stdout, Data: []byte("abc\n")}},
			want:     "ab\n[… 2 bytes not shown; full output: (unavailable)]\n[the full output could not be saved: no space left on device]\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex := executorfake.New()
			ex.Chunks, ex.Result = tt.chunks, executor.Result{SpillPath: tt.spill, SpillError: tt.spillErr}
			var got []string
			res := call(t, ex, tools.Config{CardOutputLimit: tt.limit}, "bash", `{"command":"x","description":"y"}`,
				func(s string) { got = append(got, s) })
			joined := strings.Join(got, "")
			if joined != tt.want {
				t.Errorf("card output = %q, want %q", joined, tt.want)
			}
			if res.CardOutput != joined {
				t.Errorf("CardOutput %q differs from what was streamed %q", res.CardOutput, joined)
			}
			for _, s := range got {
				if !utf8.ValidString(s) || s == "" {
					t.Errorf("streamed an invalid or empty piece %q", s)
				}
			}
		})
	}
}

func TestBashCardOutputWithoutStreaming(t *testing.T) {
	ex := executorfake.New()
	ex.Result = executor.Result{Stdout: []byte("out\n"), Combined: []byte("out\nerr\n")}
	var got strings.Builder
	res := call(t, ex, tools.Config{}, "bash", `{"command":"x","description":"y"}`, func(s string) { got.WriteString(s) })
	if res.CardOutput != "out\nerr\n" || got.String() != res.CardOutput {
		t.Errorf("CardOutput %q, streamed %q; want the combined output in both", res.CardOutput, got.String())
	}
}

func TestBashInfrastructureErrors(t *testing.T) {
	tests := []struct {
		name string
		ex   *executorfake.Executor
		want string
	}{
		{
			name: "missing workdir",
			ex: fakeWith(func(f *executorfake.Executor) {
				f.RunErr = fmt.Errorf("%w: /nope: no such file or directory", executor.ErrWorkdir)
			}),
			want: "cannot run command: invalid working directory: /nope: no such file or directory",
		},
		{
			name: "resolve fails",
			ex:   fakeWith(func(f *executorfake.Executor) { f.ResolveErr = executor.ErrClosed }),
			want: "cannot run command: executor is shut down",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, tt.ex, tools.Config{}, "bash", `{"command":"x","description":"y"}`, nil)
			if !res.IsError || res.Text != tt.want {
				t.Errorf("got %+v, want error %q", res, tt.want)
			}
			if tools.OutcomeOf(res).ExitCode != nil {
				t.Errorf("an infrastructure failure has no exit code, got %d", *tools.OutcomeOf(res).ExitCode)
			}
		})
	}
}

func TestBashAbort(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	tests := []struct {
		name string
		ex   *executorfake.Executor
		want string
	}{
		{
			name: "executor returns the stopped process",
			ex: fakeWith(func(f *executorfake.Executor) {
				f.Chunks = []executor.Chunk{{Stream: executor.Stdout, Data: []byte("started\n")}}
				f.Result = executor.Result{Stdout: []byte("started\n"), Signal: "SIGTERM", ExitCode: -1}
				f.RunHook = func(context.Context, executor.Spec) { cancel() }
			}),
			want: "started\n[killed by signal: SIGTERM]\n[aborted: the call was cancelled]",
		},
		{
			name: "executor returns an error",
			ex: fakeWith(func(f *executorfake.Executor) {
				f.RunErr, f.RunHook = context.Canceled, func(context.Context, executor.Spec) { cancel() }
			}),
			want: "command aborted: the call was cancelled",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool, _ := tools.NewBash(tt.ex, tools.Config{}).Lookup("bash")
			res := tool.Run(ctx, tools.Call{Args: json.RawMessage(`{"command":"sleep 9","description":"Wait"}`), Session: session})
			if !res.IsError || res.Text != tt.want {
				t.Errorf("got %q (IsError %v), want error %q", res.Text, res.IsError, tt.want)
			}
		})
	}
}

func TestBashBackground(t *testing.T) {
	ex := fakeWith(func(f *executorfake.Executor) {
		f.StartFunc = func(executor.Spec) (string, error) { return "bash-3", nil }
	})
	res := call(t, ex, tools.Config{}, "bash",
		`{"command":"npm run dev","description":"Start dev server","run_in_background":true,"workdir":"web","stdin":"x"}`, nil)
	want := `Started background task bash-3. Poll its output with bash_output {"task_id":"bash-3"}; stop it with bash_kill.`
	if res.IsError || res.Text != want || res.Task == nil || *res.Task != (event.Task{ID: "bash-3", Status: "running"}) {
		t.Errorf("got %+v, want text %q", res, want)
	}
	c := ex.Calls()
	_, runs, starts := c.Requests, c.Runs, c.Starts
	if len(runs) != 0 || len(starts) != 1 {
		t.Fatalf("runs %d starts %d, want 0 and 1", len(runs), len(starts))
	}
	s := starts[0]
	if s.Owner != "sess-A" || s.Workdir != "/home/u/project/web" || s.Stdin != nil {
		t.Errorf("start spec %+v", s)
	}

	ex = fakeWith(func(f *executorfake.Executor) {
		f.StartFunc = func(executor.Spec) (string, error) { return "", errors.New("spawn failed") }
	})
	res = call(t, ex, tools.Config{}, "bash", `{"command":"x","description":"y","run_in_background":true}`, nil)
	if !res.IsError || res.Text != "cannot start background task: spawn failed" {
		t.Errorf("start error: got %+v", res)
	}
}
