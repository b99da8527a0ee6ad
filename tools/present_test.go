package tools_test

import (
	"encoding/json"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor/executorfake"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/tools"
)

func TestPresentCall(t *testing.T) {
	set := tools.NewBash(executorfake.New(), tools.Config{})
	tests := []struct {
		name, tool, args string
		want             string // the intent as JSON
	}{
		{
			name: "foreground bash is a terminal titled with the command",
			tool: "bash",
			args: `{"command":"ls -la src","description":"List sources","workdir":"src","env":{"A":"b"}}`,
			want: `{"card":"terminal","title":"ls -la src","kind":"execute","description":"List sources","cwd":"src","rawInput":{"command":"ls -la src","description":"List sources","workdir":"src"}}`,
		},
		{
			name: "no workdir leaves the cwd to the bridge",
			tool: "bash",
			args: `{"command":"make","description":"Build","timeoutMs":5000}`,
			want: `{"card":"terminal","title":"make","kind":"execute","description":"Build","rawInput":{"command":"make","description":"Build","timeoutMs":5000}}`,
		},
		{
			name: "background bash is a generic execute card",
			tool: "bash",
			args: `{"command":"npm run dev","description":"Start dev server","run_in_background":true}`,
			want: `{"card":"generic","title":"npm run dev","kind":"execute","rawInput":"npm run dev","content":["Start dev server"]}`,
		},
		{
			name: "wrong types fall back to a generic card titled with the command",
			tool: "bash",
			args: `{"command":"sleep 5","timeoutMs":"5s"}`,
			want: `{"card":"generic","title":"sleep 5","kind":"execute","rawInput":{"command":"sleep 5","timeoutMs":"5s"}}`,
		},
		{
			name: "invalid JSON falls back with the text as rawInput",
			tool: "bash",
			args: `{"command":"ls`,
			want: `{"card":"generic","title":"bash","kind":"execute","rawInput":"{\"command\":\"ls"}`,
		},
		{
			name: "bash_output names the task",
			tool: "bash_output",
			args: `{"task_id":"bash-3"}`,
			want: `{"card":"generic","title":"Read output from background task bash-3","kind":"read","rawInput":"bash-3"}`,
		},
		{
			name: "bash_kill names the task",
			tool: "bash_kill",
			args: `{"task_id":"bash-3"}`,
			want: `{"card":"generic","title":"Kill background task bash-3","kind":"execute","rawInput":"bash-3"}`,
		},
		{
			name: "bash_kill without a task id",
			tool: "bash_kill",
			args: `{"id":7}`,
			want: `{"card":"generic","title":"Kill background task","kind":"execute","rawInput":{"id":7}}`,
		},
		{
			name: "unknown tool",
			tool: "python",
			args: `{"code": "print(1)"}`,
			want: `{"card":"generic","title":"python","kind":"other","rawInput":{"code":"print(1)"}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(set.PresentCall(tt.tool, json.RawMessage(tt.args)))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("intent\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestPresentResult(t *testing.T) {
	set := tools.NewBash(executorfake.New(), tools.Config{})
	fg := `{"command":"make","description":"Build"}`
	tests := []struct {
		name, tool, args string
		res              event.Result
		want             string
	}{
		{
			name: "exit 0",
			tool: "bash", args: fg,
			res:  tools.WithOutcome(event.Result{Text: "ok", CardOutput: "ok\n"}, tools.Outcome{ExitCode: intp(0), TimeoutMs: 120000}),
			want: `{"card":"terminal","output":"ok\n","exitCode":0,"failed":false,"rawOutput":{"exitCode":0,"timeoutMs":120000}}`,
		},
		{
			name: "non-zero exit fails the card",
			tool: "bash", args: fg,
			res:  tools.WithOutcome(event.Result{Text: "[exit code: 2]"}, tools.Outcome{ExitCode: intp(2)}),
			want: `{"card":"terminal","exitCode":2,"failed":true,"rawOutput":{"exitCode":2}}`,
		},
		{
			name: "timeout with exit 0 fails the card",
			tool: "bash", args: fg,
			res:  tools.WithOutcome(event.Result{Text: "[timed out after 5ms]"}, tools.Outcome{ExitCode: intp(0), TimedOut: true, TimeoutMs: 5}),
			want: `{"card":"terminal","exitCode":0,"failed":true,"rawOutput":{"exitCode":0,"timedOut":true,"timeoutMs":5},"reason":"timed out after 5ms"}`,
		},
		{
			name: "process limit fails the card and says why",
			tool: "bash", args: fg,
			res:  tools.WithOutcome(event.Result{Text: "[process limit reached: the command could not start more processes]"}, tools.Outcome{ExitCode: intp(0), LimitHit: "pids"}),
			want: `{"card":"terminal","exitCode":0,"failed":true,"rawOutput":{"exitCode":0,"limitHit":"pids"},"reason":"process limit reached: the command could not start more processes"}`,
		},
		{
			name: "process limit and a timeout",
			tool: "bash", args: fg,
			res:  tools.WithOutcome(event.Result{Text: "x"}, tools.Outcome{Signal: "SIGTERM", TimedOut: true, TimeoutMs: 3000, LimitHit: "pids"}),
			want: `{"card":"terminal","signal":"SIGTERM","failed":true,"rawOutput":{"signal":"SIGTERM","timedOut":true,"timeoutMs":3000,"limitHit":"pids"},"reason":"timed out after 3s; process limit reached"}`,
		},
		{
			name: "signal",
			tool: "bash", args: fg,
			res:  tools.WithOutcome(event.Result{Text: "[killed by signal: SIGKILL]"}, tools.Outcome{Signal: "SIGKILL"}),
			want: `{"card":"terminal","signal":"SIGKILL","failed":true,"rawOutput":{"signal":"SIGKILL"}}`,
		},
		{
			name: "error result has no exit pill",
			tool: "bash", args: fg,
			res:  event.Result{Text: "cannot run command: invalid working directory", IsError: true},
			want: `{"card":"generic","failed":true,"content":["cannot run command: invalid working directory"],"rawOutput":{"isError":true},"reason":"cannot run command: invalid working directory"}`,
		},
		{
			name: "declined",
			tool: "bash", args: fg,
			res:  event.Result{Declined: "rejected by the user"},
			want: `{"card":"generic","failed":true,"content":["rejected by the user"],"rawOutput":{"declined":"rejected by the user"},"reason":"rejected by the user"}`,
		},
		{
			name: "background start",
			tool: "bash", args: `{"command":"x","description":"y","run_in_background":true}`,
			res:  event.Result{Text: "Started background task bash-1.", Task: &event.Task{ID: "bash-1", Status: "running"}},
			want: `{"card":"generic","failed":false,"content":["Started background task bash-1."],"rawOutput":{"taskId":"bash-1","taskStatus":"running"}}`,
		},
		{
			name: "bash_output is console text",
			tool: "bash_output", args: `{"task_id":"bash-1"}`,
			res:  event.Result{Text: "hi\n[status: running]", Task: &event.Task{ID: "bash-1", Status: "running"}},
			want: "{\"card\":\"generic\",\"failed\":false,\"content\":[\"```console\\nhi\\n[status: running]\\n```\"],\"rawOutput\":{\"taskId\":\"bash-1\",\"taskStatus\":\"running\"}}",
		},
		{
			name: "cancelled run keeps its exit and says why",
			tool: "bash", args: fg,
			res: tools.WithOutcome(event.Result{Text: "partial\n[killed by signal: SIGTERM]\n[cancelled: the user stopped the turn while this call ran]", IsError: true},
				tools.Outcome{Signal: "SIGTERM"}),
			want: `{"card":"terminal","signal":"SIGTERM","failed":true,"rawOutput":{"isError":true,"signal":"SIGTERM"},"reason":"cancelled: the user stopped the turn while this call ran"}`,
		},
		{
			name: "cancelled run keeps its exit and says why",
			tool: "bash", args: fg,
			res: tools.WithOutcome(event.Result{Text: "partial\n[killed by signal: SIGTERM]\n[cancelled: the user stopped the turn while this call ran]", IsError: true},
				tools.Outcome{Signal: "SIGTERM"}),
			want: `{"card":"terminal","signal":"SIGTERM","failed":true,"rawOutput":{"isError":true,"signal":"SIGTERM"},"reason":"cancelled: the user stopped the turn while this call ran"}`,
		},
		{
			name: "unknown tool",
			tool: "python", args: `{}`,
			res:  event.Result{Text: "unknown tool python", IsError: true},
			want: `{"card":"generic","failed":true,"content":["unknown tool python"],"rawOutput":{"isError":true},"reason":"unknown tool python"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(set.PresentResult(tt.tool, json.RawMessage(tt.args), tt.res))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("intent\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
