package replay

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/tools"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// goldenSession journals a session that uses every kind of event and card
// status, then damages the file's tail, and loads it.
func goldenSession(t *testing.T) *Loaded {
	t.Helper()
	s, _ := newTestStore(t)
	const id = "20260501T120304.000000Z-0123456789abcdef"
	j := mustCreate(t, s, id, "/home/user/project")
	bash := func(callID, args string, res tools.Result) []agent.Event {
		a := json.RawMessage(args)
		return []agent.Event{
			agent.ToolCall{ID: callID, Name: "bash", Args: a},
			agent.ToolResult{ID: callID, Name: "bash", Args: a, Result: res},
		}
	}
	evs := []agent.Event{
		agent.UserPrompt{Text: "build the project\nand run the tests"},
		agent.AssistantMessage{
			Text:      "Let me look at the project first.",
			Reasoning: "The user wants a build.\nStart with the file list.",
			ToolCalls: []agent.ToolCallInfo{{ID: "c1", Name: "bash", Args: json.RawMessage(`{"command":"ls","description":"List files"}`)}},
		},
	}
	evs = append(evs, bash("c1", `{"command":"ls","description":"List files"}`, tools.Result{Text: "go.mod\nmain.go\n", ExitCode: intp(0), CardOutput: "go.mod\nmain.go\n"})...)
	evs = append(evs, bash("c2", `{"command":"go test ./..."}`, tools.Result{
		Text: "FAIL\n[exit code: 2]", ExitCode: intp(2),
		CardOutput: "\x1b[31mFAIL\x1b[0m\tpkg\n\x1b]0;pwned\adone 10%\rdone 100%\r\n",
	})...)
	evs = append(evs, bash("c3", `{"command":"yes"}`, tools.Result{Text: "y\n[killed by signal: SIGKILL]", ExitCode: intp(-1), Signal: "SIGKILL", CardOutput: "y\ny\n", Truncated: true, SpillPath: "/tmp/dsh/spill/c3.log"})...)
	evs = append(evs, bash("c4", `{"command":"sleep 10","timeoutMs":5000}`, tools.Result{Text: "[timed out after 5000ms]", ExitCode: intp(0), TimedOut: true, TimeoutMs: 5000})...)
	evs = append(evs, bash("c5", `{"command":"npm run dev","run_in_background":true}`, tools.Result{Text: "Started background task bash-1.", TaskID: "bash-1", TaskStatus: "running"})...)
	evs = append(evs, bash("c6", `{"command":"./server","run_in_background":true}`, tools.Result{Text: "Started background task bash-2.", TaskID: "bash-2", TaskStatus: "running"})...)
	evs = append(evs,
		agent.ToolCall{ID: "c7", Name: "bash_output", Args: json.RawMessage(`{"task_id":"bash-2"}`)},
		agent.ToolResult{ID: "c7", Name: "bash_output", Args: json.RawMessage(`{"task_id":"bash-2"}`), Result: tools.Result{Text: "listening\n[status: completed, exit code: 0]", TaskID: "bash-2", TaskStatus: "completed"}},
	)
	evs = append(evs, bash("c8", `{"command":"rm -rf /"}`, tools.Result{Text: "The user declined this command.", IsError: true, Declined: "user"})...)
	evs = append(evs, bash("c9", `{"command":"oops`, tools.Result{Text: "invalid arguments: unexpected end of JSON input", IsError: true})...)
	evs = append(evs,
		agent.Notice{Text: "Background task bash-3 completed (exit code: 0)."},
		agent.ErrorMessage{Text: "provider error: 429 Too Many Requests"},
		agent.TurnEnd{StopReason: agent.EndTurn},
		agent.UserPrompt{Text: "!make"},
		agent.ToolCall{ID: "d1", Name: "bash", Args: json.RawMessage(`{"command":"make"}`), Direct: true},
		agent.UserPrompt{Text: "are you still there?"},
		agent.AssistantMessage{Text: "Yes."},
	)
	mustAppend(t, j, evs...)
	if err := j.AppendState("mode", "ask"); err != nil {
		t.Fatal(err)
	}
	j.Close()
	path, _ := s.Path(id)
	appendFile(t, path, `{"v":1,"seq":99,"type":"tool_res`)
	l, err := s.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	l.Events = Settle(l.Events)
	return l
}

func TestPrintGolden(t *testing.T) {
	l := goldenSession(t)
	for _, tt := range []struct {
		file  string
		color bool
	}{{"print.golden", false}, {"print_color.golden", true}} {
		t.Run(tt.file, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Print(&buf, l, tt.color); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", tt.file)
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("output differs from %s (run with -update to accept):\n%s", golden, buf.String())
			}
			if !tt.color && bytes.ContainsAny(buf.Bytes(), "\x1b\a\r\x00") {
				t.Error("uncolored output contains control characters")
			}
		})
	}
}

// titlePresenter is a stand-in for a tool's own presenter.
type titlePresenter struct{}

func (titlePresenter) PresentCall(args json.RawMessage) tools.CallIntent {
	return tools.CallIntent{Card: tools.CardTerminal, Title: "custom " + string(args)}
}

func (titlePresenter) PresentResult(_ json.RawMessage, r tools.Result) tools.ResultIntent {
	return tools.ResultIntent{Card: tools.CardTerminal, Output: "presented " + r.Text, ExitCode: r.ExitCode}
}

func TestPrintWithPresenter(t *testing.T) {
	a := json.RawMessage(`{"x":1}`)
	l := &Loaded{Header: Header{ID: "s1"}, Events: []agent.Event{
		agent.ToolCall{ID: "c", Name: "mytool", Args: a},
		agent.ToolResult{ID: "c", Name: "mytool", Args: a, Result: tools.Result{Text: "out", ExitCode: intp(0)}},
		agent.ToolResult{ID: "u", Name: "other", Args: a, Result: tools.Result{Text: "plain"}},
	}}
	var buf bytes.Buffer
	err := PrintWith(&buf, l, PrintOptions{Tool: func(name string) (Presenter, bool) {
		return titlePresenter{}, name == "mytool"
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"$ custom {\"x\":1}\n  │ presented out\n  ✓ exit 0\n", "• other {\"x\":1}\n  │ plain\n  ✓ done\n"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestClean(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain\ttext", "plain\ttext"},
		{"\x1b[1;31mred\x1b[0m", "red"},
		{"\x1b]0;title\x07after", "after"},
		{"\x1b]8;;http://x\x1b\\link", "link"},
		{"bell\a", "bell^G"},
		{"esc\x1bc", "esc^[c"},
		{"nul\x00", "nul^@"},
		{"del\x7f c1\u009b", "del<U+007F> c1<U+009B>"},
		{"bad\xffutf8", "bad\uFFFDutf8"},
		{"\x1b[12;3", ""},
		{"\x1b[?25lhidden", "hidden"},
	}
	for _, tt := range tests {
		if got := clean(tt.in); got != tt.want {
			t.Errorf("clean(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := sanitizeLines("a\r\nprogress 1\rprogress 2\nend\r"); strings.Join(got, "|") != "a|progress 2|end" {
		t.Errorf("sanitizeLines = %q", got)
	}
}
