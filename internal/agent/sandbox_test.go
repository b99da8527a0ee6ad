package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
	"github.com/dsh-acp/dsh-acp/tools"
)

// levelBox records the sessions and levels its tool and prompt section
// were asked with.
type levelBox struct {
	box
	calls chan tools.Call
}

func (b levelBox) PromptSection(s tools.Session) string { return "SANDBOX " + string(s.Level) }

func newLevelBox() levelBox {
	b := levelBox{calls: make(chan tools.Call, 8)}
	b.box = box{testTool{name: "bash", run: func(_ context.Context, call tools.Call) event.Result {
		b.calls <- call
		return event.Result{Text: "ok"}
	}}}
	return b
}

// The approval's level reaches the tool call; the session's level is the
// call's session, and the system prompt states it from the next turn on.
func TestApprovalLevelReachesTheCall(t *testing.T) {
	lb := newLevelBox()
	var seen []tools.Session
	ap := approverFunc(func(_ context.Context, s tools.Session, call event.ToolCall) agent.Approval {
		seen = append(seen, s)
		if strings.Contains(string(call.Args), "narrow") {
			return agent.Approval{Verdict: agent.Allow, Level: executor.LevelReadOnly}
		}
		return agent.Approval{Verdict: agent.Allow}
	})
	f := newFixture(t, options{box: lb, approver: ap},
		llmtest.Calls(llmtest.Call{ID: "c1", Name: "bash", Args: `{"command":"narrow"}`}, llmtest.Call{ID: "c2", Name: "bash", Args: `{"command":"wide"}`}),
		llmtest.Reply("done"))
	f.sess.SetSandbox(executor.LevelWorkspace)
	if got := f.sess.Sandbox(); got != executor.LevelWorkspace {
		t.Fatalf("Sandbox() = %q", got)
	}
	f.prompt(t, t.Context(), "go")
	c1, c2 := <-lb.calls, <-lb.calls
	if c1.Level != executor.LevelReadOnly || c2.Level != "" {
		t.Errorf("call levels %q, %q; want read-only, empty (the session's)", c1.Level, c2.Level)
	}
	for _, c := range []tools.Call{c1, c2} {
		if c.Session.Level != executor.LevelWorkspace {
			t.Errorf("call session level %q, want workspace", c.Session.Level)
		}
	}
	if len(seen) != 2 || seen[0].Level != executor.LevelWorkspace {
		t.Errorf("the approver saw sessions %+v", seen)
	}
	if sys := f.srv.Requests()[0].Messages[0].Content; !strings.HasSuffix(sys, "SANDBOX workspace") {
		t.Errorf("system prompt does not state the level: %q", sys)
	}
}

// A direct command runs at the session's level, with no call level.
func TestDirectCommandRunsAtSessionLevel(t *testing.T) {
	lb := newLevelBox()
	f := newFixture(t, options{box: lb, noModel: true})
	f.sess.SetSandbox(executor.LevelWorkspaceNetwork)
	if _, err := f.sess.RunDirect(t.Context(), "true"); err != nil {
		t.Fatal(err)
	}
	c := <-lb.calls
	if c.Level != "" || c.Session.Level != executor.LevelWorkspaceNetwork {
		t.Errorf("direct call level %q session level %q", c.Level, c.Session.Level)
	}
}

// A queued message for the user is told once, in the next turn right after
// its prompt or command, and never reaches the model.
func TestQueueInfoToldOnceInNextTurn(t *testing.T) {
	tests := []struct {
		name string
		turn func(f *fixture)
		want string
	}{
		{"prompt", func(f *fixture) { f.prompt(t, t.Context(), "hi") }, "UserPrompt Info AssistantMessage TurnEnd(end_turn)"},
		{"direct", func(f *fixture) { _, _ = f.sess.RunDirect(t.Context(), "true") }, "UserPrompt Info ToolCall(user-"},
		{"command", func(f *fixture) {
			f.sess.Command(t.Context(), "/x", func(context.Context) string { return "" })
		}, "Command Info TurnEnd(end_turn)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, options{}, llmtest.Reply("a"), llmtest.Reply("b"))
			f.sess.QueueInfo("commands run unsandboxed")
			tc.turn(f)
			evs := f.rec.events()
			infos := only[event.Info](evs)
			if got := kinds(evs); !strings.HasPrefix(got, tc.want) || len(infos) != 1 || infos[0].Text != "commands run unsandboxed" {
				t.Fatalf("events %s (infos %+v), want %s", got, infos, tc.want)
			}
			f.rec.reset()
			f.prompt(t, t.Context(), "again")
			if n := len(only[event.Info](f.rec.events())); n != 0 {
				t.Errorf("told again in the next turn (%d infos)", n)
			}
			for _, r := range f.srv.Requests() {
				if strings.Contains(r.String(), "unsandboxed") {
					t.Errorf("the message reached the model: %s", r.String())
				}
			}
		})
	}
}
