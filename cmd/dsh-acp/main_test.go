package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/eventually"
)

func TestMain(m *testing.M) {
	code := m.Run()
	acptest.RemoveBuilds()
	os.Exit(code)
}

// runBinary runs the real dsh-acp with args and stdin, with a private state
// directory and no model.
func runBinary(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	bin := acptest.BuildBinary(t)
	cmd := exec.Command(bin, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "DSH_STATE_DIR="+t.TempDir(), "DSH_API_KEY=", "DEEPSEEK_API_KEY=", "NO_COLOR=1", "XDG_CONFIG_HOME="+t.TempDir())
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// The README's run command: piped `!` commands show as cards, a prompt with
// no model says how to configure one, and the chat exits 0 at end of input.
func TestChatDrawsCardsFromPipedInput(t *testing.T) {
	out, errOut, err := runBinary(t, "!echo hello\n!exit 3\nwhat is here?\n", "chat")
	if err != nil {
		t.Fatalf("chat: %v\nstderr: %s", err, errOut)
	}
	for _, want := range []string{"┌ echo hello\n│ hello\n└ ✓ exit 0\n", "┌ exit 3\n└ ✗ exit 3\n", "DSH_API_KEY"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// --agent runs any ACP agent; here, this binary again.
func TestChatWithAnotherAgent(t *testing.T) {
	bin := acptest.BuildBinary(t)
	out, errOut, err := runBinary(t, "!printf 'a\\nb\\n'\n", "chat", "--agent", bin, "--log-level", "error")
	if err != nil {
		t.Fatalf("chat: %v\nstderr: %s", err, errOut)
	}
	if !strings.Contains(out, "│ a\n│ b\n└ ✓ exit 0") {
		t.Errorf("output:\n%s", out)
	}
}

// `dsh-acp replay ID` finds a session in the state directory by id.
func TestReplaySubcommandByID(t *testing.T) {
	bin := acptest.BuildBinary(t)
	state := t.TempDir()
	env := append(os.Environ(), "DSH_STATE_DIR="+state, "DSH_API_KEY=", "DEEPSEEK_API_KEY=", "NO_COLOR=1", "XDG_CONFIG_HOME="+t.TempDir())
	chat := exec.Command(bin, "chat")
	chat.Env, chat.Dir, chat.Stdin = env, t.TempDir(), strings.NewReader("!echo journaled\n")
	if out, err := chat.CombinedOutput(); err != nil {
		t.Fatalf("chat: %v\n%s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join(state, "chat", "sessions", "*.jsonl")) // chat sessions live apart from an editor's
	if len(files) != 1 {
		t.Fatalf("%d journals", len(files))
	}
	id := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
	rep := exec.Command(bin, "replay", id)
	rep.Env = env
	out, err := rep.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "echo journaled") || !strings.Contains(string(out), "journaled\n") {
		t.Errorf("replay %s: %v\n%s", id, err, out)
	}
}

func TestConfigFlagsAndEnvironment(t *testing.T) {
	env := map[string]string{"DSH_MODEL": "deepseek-reasoner", "DEEPSEEK_API_KEY": "k1", "DSH_STATE_DIR": "/var/tmp/s", "DSH_MODE": "auto"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	var usage bytes.Buffer
	c, err := parseConfig("dsh-acp", []string{"--model", "m2", "--allow-env", "GH_TOKEN", "--allow-env", "NPM_TOKEN"}, lookup, &usage)
	if err != nil {
		t.Fatal(err)
	}
	if c.Model != "m2" || c.APIKey != "k1" || c.StateDir != "/var/tmp/s" || c.BaseURL != "https://api.deepseek.com" ||
		strings.Join(c.AllowEnv, ",") != "GH_TOKEN,NPM_TOKEN" || c.Mode != "auto" {
		t.Errorf("config %+v", c)
	}
	env["DSH_API_KEY"] = "k0" // DSH_API_KEY wins over DEEPSEEK_API_KEY
	if c, _ := parseConfig("dsh-acp", nil, lookup, &usage); c.APIKey != "k0" || c.Model != "deepseek-reasoner" {
		t.Errorf("env fallbacks: %+v", c)
	}
	for _, bad := range [][]string{{"--state-dir", "rel"}, {"--mode", "yolo"}, {"--max-line", "10"}, {"--api-key", "x"}, {"extra"}} {
		if _, err := parseConfig("dsh-acp", bad, lookup, &usage); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestConfigExecutor(t *testing.T) {
	env := map[string]string{"DSH_STATE_DIR": "/var/tmp/s"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	var usage bytes.Buffer
	if c, err := parseConfig("dsh-acp", nil, lookup, &usage); err != nil || c.Executor != "local" || c.SSHTarget != nil {
		t.Errorf("default: %+v %v", c, err)
	}
	c, err := parseConfig("dsh-acp", []string{"--executor", "ssh://me@build1:2222/srv/p", "--ssh-identity", "/k"}, lookup, &usage)
	if err != nil || c.SSHTarget == nil || c.SSHTarget.Host != "build1" || c.SSHTarget.Dir != "/srv/p" || c.SSHIdentity != "/k" {
		t.Errorf("ssh: %+v %v", c, err)
	}
	env["DSH_EXECUTOR"] = "ssh://build2"
	if c, err := parseConfig("dsh-acp", nil, lookup, &usage); err != nil || c.SSHTarget == nil || c.SSHTarget.Host != "build2" {
		t.Errorf("DSH_EXECUTOR: %+v %v", c, err)
	}
	delete(env, "DSH_EXECUTOR")
	for _, bad := range [][]string{{"--executor", "docker"}, {"--executor", "ssh://u:pw@h"}, {"--ssh-identity", "/k"}} {
		if _, err := parseConfig("dsh-acp", bad, lookup, &usage); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	usage.Reset()
	parseConfig("dsh-acp", []string{"--help"}, lookup, &usage)
	for _, want := range []string{"-executor", "ssh://[user@]host[:port][/path]", "-ssh-identity", "-ssh-known-hosts", "DSH_EXECUTOR"} {
		if !strings.Contains(usage.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

// waitOutput polls until out contains want.
func waitOutput(t *testing.T, out *acptest.LockedBuffer, want string) {
	t.Helper()
	eventually.True(t, 20*time.Second, func() bool { return strings.Contains(out.String(), want) },
		"output never showed %q:\n%s", want, out)
}

// Ctrl-C cancels the running turn (the command's card ends failed), and
// the chat still exits 0 at the end of its input (the terminal semantics of
// Ctrl-C are TestChatCtrlCOnATerminal's).
func TestChatCtrlCCancelsTheTurn(t *testing.T) {
	bin := acptest.BuildBinary(t)
	cmd := exec.Command(bin, "chat")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "DSH_STATE_DIR="+t.TempDir(), "DSH_API_KEY=", "DEEPSEEK_API_KEY=", "NO_COLOR=1", "XDG_CONFIG_HOME="+t.TempDir())
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out acptest.LockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	io.WriteString(in, "!echo started; sleep 600\n")
	// Running, not just spawned: a sandbox still being set up has no
	// command for the TERM to reach (executor/sandbox's known limits).
	waitOutput(t, &out, "│ started")
	cmd.Process.Signal(syscall.SIGINT)
	waitOutput(t, &out, "[cancelled]")
	// The card says why, inside it, and ends with the signal that stopped it.
	if !strings.Contains(out.String(), "│ dsh-acp: cancelled: the user stopped the turn while this call ran\n└ ✗ SIGTERM") {
		t.Errorf("the cancelled card has no reason and signal pill:\n%s", out.String())
	}
	io.WriteString(in, "!echo after\n")
	waitOutput(t, &out, "│ after")
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("chat exit: %v\n%s", err, out.String())
	}
}

// Configuration is resolved once, here: a card cap above what the journal
// keeps is refused with the reason (a reloaded card must show what the live
// one did), a relative XDG_STATE_HOME is ignored as the XDG spec says, and
// `replay` reads nothing but where the state directory is (an invalid mode
// in the environment does not stop it).
func TestConfigResolvedOnce(t *testing.T) {
	var usage bytes.Buffer
	none := func(string) (string, bool) { return "", false }
	_, err := parseConfig("dsh-acp", []string{"--card-output-limit", "3145728", "--state-dir", "/var/tmp/s"}, none, &usage)
	if err == nil || !strings.Contains(err.Error(), "the journal keeps at most 2097152") {
		t.Errorf("a 3 MiB card cap: %v", err)
	}
	rel := func(k string) (string, bool) {
		if k == "XDG_STATE_HOME" {
			return "relative/state", true
		}
		return "", false
	}
	if dir := defaultStateDir(rel); !filepath.IsAbs(dir) || strings.Contains(dir, "relative") {
		t.Errorf("a relative XDG_STATE_HOME gave %q", dir)
	}
	state := t.TempDir()
	yolo := map[string]string{"DSH_MODE": "yolo", "DSH_STATE_DIR": state}
	_, err = loadForReplay("20260102T030405.000000Z-0000000000000001", func(k string) (string, bool) { v, ok := yolo[k]; return v, ok })
	if err == nil || !strings.Contains(err.Error(), "no session") {
		t.Errorf("replay with DSH_MODE=yolo: %v, want the unknown-session error", err)
	}
}

func TestSandboxFlag(t *testing.T) {
	tests := []struct {
		args []string
		env  string
		want executor.Level
		bad  bool
	}{
		{want: ""},
		{args: []string{"--sandbox", "auto"}, want: ""},
		{args: []string{"--sandbox", "read-only"}, want: executor.LevelReadOnly},
		{args: []string{"--sandbox=Workspace-Network"}, want: executor.LevelWorkspaceNetwork},
		{env: "off", want: executor.LevelOff},
		{env: "workspace", args: []string{"--sandbox", "read-only"}, want: executor.LevelReadOnly},
		{env: "auto", want: ""},
		{args: []string{"--sandbox", "none"}, bad: true},
		{env: "strict", bad: true},
	}
	for _, tc := range tests {
		lookup := func(k string) (string, bool) {
			if k == "DSH_SANDBOX" && tc.env != "" {
				return tc.env, true
			}
			return "", false
		}
		var usage bytes.Buffer
		c, err := parseConfig("dsh-acp", tc.args, lookup, &usage)
		switch {
		case tc.bad && (err == nil || !strings.Contains(err.Error(), "--sandbox")):
			t.Errorf("%v env %q: error %v, want a --sandbox error", tc.args, tc.env, err)
		case !tc.bad && (err != nil || c.Sandbox != tc.want):
			t.Errorf("%v env %q: level %q (%v), want %q", tc.args, tc.env, c.Sandbox, err, tc.want)
		}
	}
}
