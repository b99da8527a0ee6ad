package tools_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/executorfake"
	"github.com/dsh-acp/dsh-acp/tools"
)

// The call's level wins over the session's, which wins over the
// executor's default.
func TestBashRequestLevel(t *testing.T) {
	tests := []struct {
		name          string
		session, call executor.Level
		want          executor.Level // in the request
		wantSpec      executor.Level
	}{
		{"executor default", "", "", "", executor.LevelWorkspace},
		{"session level", executor.LevelWorkspaceNetwork, "", executor.LevelWorkspaceNetwork, executor.LevelWorkspaceNetwork},
		{"call level", executor.LevelWorkspace, executor.LevelReadOnly, executor.LevelReadOnly, executor.LevelReadOnly},
		{"call level without session level", "", executor.LevelOff, executor.LevelOff, executor.LevelOff},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ex := executorfake.New()
			bash, _ := tools.NewBash(ex, tools.Config{}).Lookup("bash")
			s := session
			s.Level = tc.session
			res := bash.Run(t.Context(), tools.Call{ID: "c", Args: json.RawMessage(`{"command":"true","description":"d"}`), Session: s, Level: tc.call})
			if res.IsError {
				t.Fatalf("error result: %s", res.Text)
			}
			c := ex.Calls()
			if c.Requests[0].Level != tc.want || c.Runs[0].Level != tc.wantSpec {
				t.Errorf("request level %q, spec level %q; want %q, %q", c.Requests[0].Level, c.Runs[0].Level, tc.want, tc.wantSpec)
			}
		})
	}
}

// A level the executor cannot build is refused with a result whose first
// line (the card's reason) names the level and why, foreground and
// background alike.
func TestBashSandboxRefusal(t *testing.T) {
	why := fmt.Errorf("%w: bubblewrap (bwrap) not found: exec: \"bwrap\": executable file not found in $PATH", executor.ErrSandbox)
	for _, args := range []string{`{"command":"true","description":"d"}`, `{"command":"true","description":"d","run_in_background":true}`} {
		ex := executorfake.New()
		ex.LevelsOffered, ex.Why = []executor.Level{executor.LevelOff}, why
		res := call(t, ex, tools.Config{}, "bash", args, nil)
		first, rest, _ := strings.Cut(res.Text, "\n")
		want := "Not run: sandbox level workspace cannot be built here: bubblewrap (bwrap) not found: exec: \"bwrap\": executable file not found in $PATH"
		if !res.IsError || first != want || !strings.Contains(rest, "refused rather than run unsandboxed") {
			t.Errorf("%s: result %+v; want an error whose first line is %q", args, res, want)
		}
		set := tools.NewBash(ex, tools.Config{})
		if got := set.PresentResult("bash", json.RawMessage(args), res).Reason; got != want {
			t.Errorf("%s: card reason %q, want %q", args, got, want)
		}
	}
}

func TestSandboxMarker(t *testing.T) {
	tests := []struct {
		name   string
		level  executor.Level
		code   int
		stderr string
		want   string // "" for no marker
	}{
		{"write at workspace", executor.LevelWorkspace, 1, "touch: cannot touch '/etc/x': Read-only file system",
			"[sandbox: level workspace blocked a write (writable: the workspace, /tmp, ~/.cache; network: off)]"},
		{"write at read-only", executor.LevelReadOnly, 1, "bash: line 1: x: Read-only file system",
			"[sandbox: level read-only blocked a write (writable: /tmp, ~/.cache; network: off)]"},
		{"connection without network", executor.LevelWorkspace, 1, "bash: connect: Network is unreachable",
			"[sandbox: level workspace blocked a connection (writable: the workspace, /tmp, ~/.cache; network: off)]"},
		{"both", executor.LevelReadOnly, 2, "Read-only file system\ncurl: (6) Could not resolve host: example.com",
			"[sandbox: level read-only blocked a write and a connection (writable: /tmp, ~/.cache; network: off)]"},
		{"connection with network", executor.LevelWorkspaceNetwork, 7, "curl: (7) Connection refused", ""},
		{"write with network", executor.LevelWorkspaceNetwork, 1, "Read-only file system",
			"[sandbox: level workspace-network blocked a write (writable: the workspace, /tmp, ~/.cache; network: on)]"},
		{"level off", executor.LevelOff, 1, "Read-only file system", ""},
		{"success", executor.LevelWorkspace, 0, "Read-only file system", ""},
		{"other failure", executor.LevelWorkspace, 1, "no such file", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ex := executorfake.New()
			ex.Result = executor.Result{ExitCode: tc.code, Stderr: []byte(tc.stderr), Combined: []byte(tc.stderr)}
			bash, _ := tools.NewBash(ex, tools.Config{}).Lookup("bash")
			s := session
			s.Level = tc.level
			res := bash.Run(t.Context(), tools.Call{ID: "c", Args: json.RawMessage(`{"command":"x","description":"d"}`), Session: s})
			has := strings.Contains(res.Text, "[sandbox:")
			if tc.want == "" && has || tc.want != "" && !strings.HasSuffix(res.Text, fmt.Sprintf("[exit code: %d]\n%s", tc.code, tc.want)) {
				t.Errorf("result text %q; want marker %q", res.Text, tc.want)
			}
		})
	}
}

// The prompt section states the session's level: what is writable and
// whether the network is on; without a level, the executor's default.
func TestPromptSectionPerLevel(t *testing.T) {
	ex := executorfake.New()
	set := tools.NewBash(ex, tools.Config{})
	want := map[executor.Level][]string{
		executor.LevelReadOnly:         {"level `read-only`", "nothing is writable but `/tmp` and `~/.cache`", "there is no network", "`[sandbox: …]`"},
		executor.LevelWorkspace:        {"level `workspace`", "only the session's directory and its subtree are writable", "there is no network"},
		executor.LevelWorkspaceNetwork: {"level `workspace-network`", "only the session's directory", "the network is available"},
		executor.LevelOff:              {"without a sandbox"},
	}
	for level, phrases := range want {
		got := set.PromptSection(tools.Session{Level: level})
		for _, p := range phrases {
			if !strings.Contains(got, p) {
				t.Errorf("%s: prompt section lacks %q:\n%s", level, p, got)
			}
		}
		if !strings.Contains(got, "[exit code: N]") {
			t.Errorf("%s: the common habits are gone:\n%s", level, got)
		}
	}
	if got, def := set.PromptSection(tools.Session{}), set.PromptSection(tools.Session{Level: executor.LevelWorkspace}); got != def {
		t.Errorf("no level: prompt section is not the executor default's (workspace):\n%s", got)
	}
	ex.Default = executor.LevelOff
	if got := set.PromptSection(tools.Session{}); !strings.Contains(got, "without a sandbox") {
		t.Errorf("default off: %s", got)
	}
}

// A refusal speaks of the executor in use: on a remote host it names the
// host and what it lacks, and passes the executor's fix on, never this
// machine's.
func TestBashSandboxRefusalOnAHost(t *testing.T) {
	why := &executor.SandboxReason{Host: "build.example", Missing: "bwrap", Fix: "Install bubblewrap on build.example, then restart the agent.",
		Err: fmt.Errorf("%w: the host has no bwrap on its PATH", executor.ErrSandbox)}
	ex := executorfake.New()
	ex.LevelsOffered, ex.Why = []executor.Level{executor.LevelOff}, why
	res := call(t, ex, tools.Config{}, "bash", `{"command":"true","description":"d"}`, nil)
	first, rest, _ := strings.Cut(res.Text, "\n")
	want := "Not run: sandbox level workspace cannot be built on the host build.example: the host has no bwrap on its PATH"
	if !res.IsError || first != want || !strings.Contains(rest, "Tell the user: Install bubblewrap on build.example") || strings.Contains(rest, "work here") {
		t.Errorf("result %q; want the first line %q and the host's fix", res.Text, want)
	}
}
