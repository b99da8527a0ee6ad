package tools_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/executorfake"
	"github.com/dsh-acp/dsh-acp/tools"
)

func TestBashOutput(t *testing.T) {
	tests := []struct {
		name    string
		cfg     tools.Config
		rr      executor.ReadResult
		err     error
		want    string
		isError bool
		status  string
	}{
		{
			name:   "running with new output",
			rr:     executor.ReadResult{ID: "bash-3", Output: []byte("\x1b[32mready\x1b[0m on :8080\n"), Status: executor.Running},
			want:   "ready on :8080\n[status: running]",
			status: "running",
		},
		{
			name:   "running, nothing new",
			rr:     executor.ReadResult{ID: "bash-3", Status: executor.Running},
			want:   "(no new output)\n[status: running]",
			status: "running",
		},
		{
			name:   "completed with a non-zero exit is not an error",
			rr:     executor.ReadResult{ID: "bash-3", Output: []byte("FAIL\n"), Status: executor.Completed, ExitCode: 1},
			want:   "FAIL\n[status: completed, exit code: 1]",
			status: "completed",
		},
		{
			name:   "killed",
			rr:     executor.ReadResult{ID: "bash-3", Status: executor.Killed, Signal: "SIGTERM", ExitCode: -1},
			want:   "(no new output)\n[status: killed]",
			status: "killed",
		},
		{
			name:   "lost output with a spill file",
			rr:     executor.ReadResult{ID: "bash-3", Output: []byte("tail\n"), Status: executor.Running, Lost: 4096, SpillPath: "/spill/bash-3.log"},
			want:   "tail\n[output truncated: 4096 bytes lost; full output: /spill/bash-3.log]\n[status: running]",
			status: "running",
		},
		{
			name:   "lost output without a spill file",
			rr:     executor.ReadResult{ID: "bash-3", Output: []byte("tail\n"), Status: executor.Completed, Lost: 1},
			want:   "tail\n[output truncated: 1 bytes lost; full output: (unavailable)]\n[status: completed, exit code: 0]",
			status: "completed",
		},
		{
			name:   "lost output that could not be saved",
			rr:     executor.ReadResult{ID: "bash-3", Output: []byte("tail\n"), Status: executor.Running, Lost: 1, SpillError: "no space left on device"},
			want:   "tail\n[output truncated: 1 bytes lost; full output: (unavailable)]\n[the full output could not be saved: no space left on device]\n[status: running]",
			status: "running",
		},
		{
			name:   "finished at its process limit",
			rr:     executor.ReadResult{ID: "bash-3", Status: executor.Completed, LimitHit: "pids"},
			want:   "(no new output)\n[process limit reached: the command could not start more processes]\n[status: completed, exit code: 0]",
			status: "completed",
		},
		{
			name:   "model cap",
			cfg:    tools.Config{OutputLimit: 100},
			rr:     executor.ReadResult{ID: "bash-3", Output: []byte(strings.Repeat("y", 100) + "Z"), Status: executor.Running},
			want:   "[… 93 characters omitted]\nyyyyyyyZ\n[output truncated; full output: (unavailable)]\n[status: running]",
			status: "running",
		},
		{
			name:    "another session's task",
			err:     &executor.OwnerError{ID: "bash-3"},
			want:    "task bash-3 belongs to another session",
			isError: true,
		},
		{
			name:    "a bare ErrNotOwner still names the task",
			err:     fmt.Errorf("read: %w", executor.ErrNotOwner),
			want:    "task bash-3 belongs to another session",
			isError: true,
		},
		{
			name:    "unknown task",
			err:     &executor.UnknownTaskError{ID: "bash-3"},
			want:    "unknown task bash-3",
			isError: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex := executorfake.New()
			ex.ReadFunc = func(string, string) (executor.ReadResult, error) { return tt.rr, tt.err }
			res := call(t, ex, tt.cfg, "bash_output", `{"task_id":"bash-3"}`, nil)
			if res.Text != tt.want || res.IsError != tt.isError {
				t.Errorf("got %q (IsError %v)\nwant %q (IsError %v)", res.Text, res.IsError, tt.want, tt.isError)
			}
			status := ""
			if res.Task != nil {
				status = res.Task.Status
			}
			if status != tt.status {
				t.Errorf("task status = %q, want %q", status, tt.status)
			}
			if reads := ex.Calls().Reads; len(reads) != 1 || reads[0] != (executorfake.Access{ID: "bash-3", Caller: "sess-A"}) {
				t.Errorf("reads = %v, want one read of bash-3 by sess-A", reads)
			}
		})
	}
}

func TestBashKill(t *testing.T) {
	tests := []struct {
		name    string
		kr      executor.KillResult
		err     error
		want    string
		isError bool
	}{
		{
			name: "killed",
			kr:   executor.KillResult{ID: "bash-3", Status: executor.Killed, Signal: "SIGTERM", ExitCode: -1},
			want: "Killed background task bash-3 [status: killed].",
		},
		{
			name: "already finished is a reported no-op",
			kr:   executor.KillResult{ID: "bash-3", AlreadyFinished: true, Status: executor.Completed, ExitCode: 0},
			want: "Background task bash-3 had already finished [status: completed, exit code: 0]; nothing to kill.",
		},
		{
			name:    "unknown task",
			err:     &executor.UnknownTaskError{ID: "bash-3"},
			want:    "unknown task bash-3",
			isError: true,
		},
		{
			name:    "another session's task",
			err:     &executor.OwnerError{ID: "bash-3"},
			want:    "task bash-3 belongs to another session",
			isError: true,
		},
		{
			name:    "other failure",
			err:     executor.ErrClosed,
			want:    "task bash-3: executor is shut down",
			isError: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex := executorfake.New()
			ex.KillFunc = func(string, string) (executor.KillResult, error) { return tt.kr, tt.err }
			res := call(t, ex, tools.Config{}, "bash_kill", `{"task_id":"bash-3","signal":"KILL"}`, nil)
			if res.Text != tt.want || res.IsError != tt.isError {
				t.Errorf("got %q (IsError %v)\nwant %q (IsError %v)", res.Text, res.IsError, tt.want, tt.isError)
			}
			if kills := ex.Calls().Kills; len(kills) != 1 || kills[0] != (executorfake.Access{ID: "bash-3", Caller: "sess-A"}) {
				t.Errorf("kills = %v, want one kill of bash-3 by sess-A", kills)
			}
		})
	}
}

func TestWatchCompletions(t *testing.T) {
	ex := executorfake.New()
	type notice struct{ owner, text string }
	var got []notice
	live := map[string]bool{"sess-A": true}
	stop := tools.WatchCompletions(ex, func(owner, text string) bool {
		got = append(got, notice{owner, text})
		return live[owner]
	})
	ex.Notify(executor.TaskDone{ID: "bash-3", Owner: "sess-A", Command: "npm run build", Status: executor.Completed, ExitCode: 2})
	ex.Notify(executor.TaskDone{ID: "bash-4", Owner: "sess-gone", Command: "sleep 100\necho done", Status: executor.Killed, Signal: "SIGTERM", ExitCode: -1})
	stop()
	ex.Notify(executor.TaskDone{ID: "bash-5", Owner: "sess-A", Command: "true", Status: executor.Completed})
	want := []notice{
		{"sess-A", "Background task bash-3 (`npm run build`) finished [status: completed, exit code: 2]. Read its remaining output with bash_output {\"task_id\":\"bash-3\"}."},
		{"sess-gone", "Background task bash-4 (`sleep 100…`) was stopped [status: killed]. Read its remaining output with bash_output {\"task_id\":\"bash-4\"}."},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("notices:\n%q\nwant\n%q", got, want)
	}
}

func TestCompletionNoticeShortensCommands(t *testing.T) {
	long := strings.Repeat("a", 200)
	text := tools.CompletionNotice(executor.TaskDone{ID: "bash-1", Command: "echo `x` " + long, Status: executor.Completed})
	if !strings.Contains(text, "(`echo 'x' "+strings.Repeat("a", 70)+"…`)") {
		t.Errorf("notice %q", text)
	}
}
