package tools_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor/executorfake"
	"github.com/dsh-acp/dsh-acp/tools"
)

func TestSet(t *testing.T) {
	set := tools.NewBash(executorfake.New(), tools.Config{})
	var names []string
	for _, tool := range set.All() {
		names = append(names, tool.Name())
		var schema map[string]any
		if err := json.Unmarshal(tool.Schema(), &schema); err != nil || schema["type"] != "object" {
			t.Errorf("%s: schema %s is not an object schema: %v", tool.Name(), tool.Schema(), err)
		}
		if tool.Description() == "" || strings.Contains(tool.Description(), "{{") {
			t.Errorf("%s: description not rendered: %q", tool.Name(), tool.Description())
		}
		if got, ok := set.Lookup(tool.Name()); !ok || got != tool {
			t.Errorf("Lookup(%q) = %v, %v", tool.Name(), got, ok)
		}
	}
	if strings.Join(names, ",") != "bash,bash_output,bash_kill" {
		t.Errorf("All() order = %v", names)
	}
	if _, ok := set.Lookup("rm"); ok {
		t.Error("Lookup of an unknown tool succeeded")
	}
	set.All()[0] = nil
	if set.All()[0] == nil {
		t.Error("All returns the Set's own slice")
	}
}

func TestTextsStateConfiguredLimits(t *testing.T) {
	set := tools.NewBash(executorfake.New(), tools.Config{
		OutputLimit: 12345, DefaultTimeout: 90 * time.Second, MaxTimeout: 15 * time.Minute,
	})
	bash, _ := set.Lookup("bash")
	for _, want := range []string{"90 seconds", "90000 ms", "15 minutes", "900000 ms", "12345 characters", "workdir", "bash_output", "[exit code: N]"} {
		if !strings.Contains(bash.Description(), want) {
			t.Errorf("bash description lacks %q", want)
		}
	}
	if !strings.Contains(string(bash.Schema()), "default 90000, at most 900000") {
		t.Errorf("bash schema does not state the limits: %s", bash.Schema())
	}
	prompt := set.PromptSection(tools.Session{})
	for _, want := range []string{"[exit code: N]", "investigate", "`workdir` rather than `cd`", "bash_output", "90 seconds", "15 minutes", "12345 characters"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("prompt section lacks %q:\n%s", want, prompt)
		}
	}
	out, _ := set.Lookup("bash_output")
	if !strings.Contains(out.Description(), "12345 characters") {
		t.Errorf("bash_output description does not state the cap: %q", out.Description())
	}
}

func TestDefaultTexts(t *testing.T) {
	bash, _ := tools.NewBash(executorfake.New(), tools.Config{}).Lookup("bash")
	for _, want := range []string{"2 minutes (120000 ms)", "10 minutes (600000 ms)", "30000 characters"} {
		if !strings.Contains(bash.Description(), want) {
			t.Errorf("default bash description lacks %q", want)
		}
	}
}

// remoteExec is a fake executor running commands on another machine.
type remoteExec struct{ *executorfake.Executor }

func (*remoteExec) SessionDir(d string) string             { return d }
func (*remoteExec) CheckDir(context.Context, string) error { return nil }
func (*remoteExec) Location(d string) string               { return "build1:" + d }
func (*remoteExec) Describe() string                       { return "on the remote host build1, over SSH" }

func TestPromptSaysWhereCommandsRun(t *testing.T) {
	remote := tools.NewBash(&remoteExec{executorfake.New()}, tools.Config{}).PromptSection(tools.Session{})
	if want := "Commands run on the remote host build1, over SSH, not on the machine the editor runs on"; !strings.Contains(remote, want) {
		t.Errorf("remote prompt section lacks %q:\n%s", want, remote)
	}
	local := tools.NewBash(executorfake.New(), tools.Config{}).PromptSection(tools.Session{})
	if strings.Contains(local, "Commands run on") || strings.Contains(local, "\n\n\n") {
		t.Errorf("local prompt section:\n%s", local)
	}
}
