package tools_test

import (
	"context"
	"encoding/json"
	"testing"
	"unicode/utf8"

	acp "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/executor/executorfake"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/presentation"
	"github.com/dsh-acp/dsh-acp/tools"
)

// FuzzPresent feeds arbitrary logged arguments and results (as a journal
// might hold them, from any version) to every tool's Run, PresentCall and
// PresentResult and through the ACP bridge: nothing may panic, and every
// intent and update must marshal.
func FuzzPresent(f *testing.F) {
	for _, seed := range []struct{ name, args, res string }{
		{"bash", `{"command":"ls","description":"List"}`, `{"text":"a","exitCode":0,"cardOutput":"a\n"}`},
		{"bash", `{"command":"x","run_in_background":true}`, `{"text":"Started","taskId":"bash-1"}`},
		{"bash", `{"command":"x","timeoutMs":"1"}`, `{"text":"bad","isError":true}`},
		{"bash", `{"command":"x","workdir":"rel"}`, `{"signal":"SIGKILL","exitCode":-1,"timedOut":true}`},
		{"bash", `{"command`, `nope`},
		{"bash_output", `{"task_id":"bash-1"}`, `{"text":"x\n[status: running]"}`},
		{"bash_kill", `{"task_id":7}`, `{"declined":"no"}`},
		{"mystery", "\xff\xfe", `{"text":"\u001b[31m"}`},
		{"todo_write", `{"todos":[{"content":"a","status":"pending"}]}`, `{"text":"ok","payload":{"todos":[{"content":"a","status":"x"}]}}`},
		{"todo_write", `{"todos":7}`, `{"text":"ok","payload":{"todos":{}}}`},
	} {
		f.Add(seed.name, []byte(seed.args), []byte(seed.res))
	}
	set := tools.NewBuiltin(executorfake.New(), tools.Config{})
	f.Fuzz(func(t *testing.T, name string, args, resJSON []byte) {
		var res event.Result
		_ = json.Unmarshal(resJSON, &res) // any shape: a partial or zero Result is fine
		if tool, ok := set.Lookup(name); ok {
			ran := tool.Run(context.Background(), tools.Call{Args: args, Session: session, Output: func(string) {}})
			if !utf8.ValidString(ran.Text) {
				t.Errorf("Run text is not valid UTF-8: %q", ran.Text)
			}
		}
		in := set.PresentCall(name, args)
		out := set.PresentResult(name, args, res)
		if _, err := json.Marshal(in); err != nil {
			t.Fatalf("call intent does not marshal: %v", err)
		}
		if _, err := json.Marshal(out); err != nil {
			t.Fatalf("result intent does not marshal: %v", err)
		}
		for _, caps := range []presentation.Caps{{Terminal: true}, {}} {
			ups := presentation.Replay("call_1", in, out, session.Cwd, caps)
			if out.Plan != nil {
				ups = append(ups, presentation.PlanUpdate(out.Plan.Entries))
			}
			if live, ok := presentation.CardOutput("call_1", res.CardOutput, caps); ok {
				ups = append(ups, live)
			}
			for _, u := range ups {
				if _, err := json.Marshal(acp.SessionNotification{SessionId: "s", Update: u}); err != nil {
					t.Fatalf("update does not marshal: %v", err)
				}
			}
		}
	})
}
