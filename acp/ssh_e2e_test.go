package acp_test

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
	"github.com/dsh-acp/dsh-acp/internal/sshdtest"
)

// These tests run the real daemon with --executor ssh://… against a real
// sshd on 127.0.0.1 (internal/sshdtest): the "remote" host is this
// machine, so the tests can look at its files and processes directly.

// sshServer starts sshd with a private remote state directory (so spill
// files do not land in the test user's own).
func sshServer(t *testing.T) *sshdtest.Server {
	t.Helper()
	return sshdtest.StartWith(t, sshdtest.Options{SetEnv: []string{"XDG_STATE_HOME=" + t.TempDir()}})
}

// sshArgs are the daemon's flags for srv, with path as the address's path.
func sshArgs(srv *sshdtest.Server, path string) []string {
	return []string{
		"--executor", fmt.Sprintf("ssh://%s@%s:%d%s", srv.User, srv.Host, srv.Port, path),
		"--ssh-identity", srv.ClientKey, "--ssh-known-hosts", srv.KnownHosts, "--kill-grace", "500ms",
	}
}

// sleepMarker is a `sleep` argument unique to one test, to find its
// processes on the host by.
func sleepMarker() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("300.%d", binary.BigEndian.Uint32(b[:])%1000000000)
}

// requireNoSurvivor fails unless no process with marker in its command
// line is left on the host.
func requireNoSurvivor(t *testing.T, what, marker string) {
	t.Helper()
	if left, err := acptest.WaitNoProcsWithMarker(ctxT(t), marker); err != nil {
		t.Errorf("%s: survivors %+v: %v", what, left, err)
	}
}

// directTurn runs a `!` command and returns the turn's one card.
func (d *daemon) directTurn(sid, command string) *card {
	d.t.Helper()
	before := len(d.Updates(sid))
	d.prompt(sid, "!"+command)
	return onlyCard(d.t, decodeUpdates(d.t, d.Updates(sid)[before:]))
}

func TestE2ESSHDirectCommand(t *testing.T) {
	srv := sshServer(t)
	d := startDaemon(t, acptest.ZedCapabilities(), sshArgs(srv, ""))
	cwd := t.TempDir()
	sid := d.newSession(cwd)
	c := d.directTurn(sid, "echo hi")
	if c.open.Meta.Info == nil || c.open.Meta.Info.Cwd != "127.0.0.1:"+cwd {
		t.Errorf("terminal_info %+v, want the host's name in the cwd", c.open.Meta.Info)
	}
	if out := strings.Join(c.outputs, ""); out != "hi\n" {
		t.Errorf("terminal output %q", out)
	}
	if c.final == nil || c.final.Status != "completed" || c.final.Meta.Exit == nil || c.final.Meta.Exit.ExitCode == nil || *c.final.Meta.Exit.ExitCode != 0 {
		t.Errorf("final %+v", c.final)
	}
	// The command ran through the ssh connection: its environment is the
	// host's login environment, not the daemon's.
	c = d.directTurn(sid, `echo "[$SSH_CONNECTION] [${DSH_STATE_DIR-unset}]"`)
	if out := strings.Join(c.outputs, ""); !strings.Contains(out, fmt.Sprintf(" 127.0.0.1 %d] [unset]", srv.Port)) {
		t.Errorf("environment seen by the command: %q", out)
	}
	// A session directory missing on the host is refused.
	var r map[string]any
	err := d.Call(ctxT(t), "session/new", map[string]any{"cwd": filepath.Join(cwd, "missing"), "mcpServers": []any{}}, &r)
	if rpcCode(err) != -32602 || !strings.Contains(err.Error(), "on 127.0.0.1") {
		t.Errorf("session/new in a directory missing on the host: %v", err)
	}
}

// The model calls bash with a relative workdir; the address's path maps
// the editor's directory to another one on the host.
func TestE2ESSHModelRelativeWorkdir(t *testing.T) {
	sshd := sshServer(t)
	remote := t.TempDir()
	if err := os.Mkdir(filepath.Join(remote, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(t,
		llmtest.Calls(llmtest.Call{ID: "call_pwd", Name: "bash", Args: llmArgs(map[string]any{"command": "pwd", "description": "Where am I", "workdir": "sub"})}),
		llmtest.Reply("done"),
	)
	editor := t.TempDir() // the editor's project directory, mapped to remote
	f := newLLMFixture(t, srv, llmOptions{args: sshArgs(sshd, remote), cwd: editor})
	us := f.mustTurn("where?", "end_turn")
	seq := llmCardSequence(t, us)
	if len(seq) != 1 {
		t.Fatalf("%d cards: %+v", len(seq), us)
	}
	want := filepath.Join(remote, "sub")
	if info := seq[0].open.Meta.Info; info == nil || info.Cwd != "127.0.0.1:"+want {
		t.Errorf("terminal_info %+v, want 127.0.0.1:%s", info, want)
	}
	reqs := srv.Requests()
	if got := llmToolResult(t, reqs[1], "call_pwd"); got != want {
		t.Errorf("pwd = %q, want %q", got, want)
	}
	system := reqs[0].Messages[0].Content
	for _, s := range []string{"Commands run on the remote host 127.0.0.1, over SSH", "The session's working directory is " + remote} {
		if !strings.Contains(system, s) {
			t.Errorf("the system prompt lacks %q:\n%s", s, system)
		}
	}
}

// A background task on the host is read incrementally and killed; a
// foreground command that ignores TERM is stopped by its timeout; neither
// leaves a process behind.
func TestE2ESSHBackgroundAndTimeout(t *testing.T) {
	sshd := sshServer(t)
	cwd := t.TempDir()
	bgMark, fgMark := sleepMarker(), sleepMarker()
	bgCmd := fmt.Sprintf("echo line1; touch r1; while [ ! -e go ]; do sleep 0.02; done; echo line2; touch r2; trap '' TERM; sleep %s", bgMark)
	fgCmd := "trap '' TERM; sleep " + fgMark
	task := `{"task_id":"bash-1"}`
	srv := llmtest.New(t,
		llmtest.Calls(llmBash("call_bg", bgCmd, "Two lines, then wait", true)),
		llmtest.Calls(llmtest.Call{ID: "call_read1", Name: "bash_output", Args: task}),
		llmtest.Calls(llmtest.Call{ID: "call_read2", Name: "bash_output", Args: task}),
		llmtest.Calls(llmtest.Call{ID: "call_kill", Name: "bash_kill", Args: task}),
		llmtest.Calls(llmtest.Call{ID: "call_fg", Name: "bash", Args: llmArgs(map[string]any{"command": fgCmd, "description": "Ignore TERM", "timeoutMs": 1000})}),
		llmtest.Reply("ok"),
	)
	base := llmGate(t, srv, func(n int) {
		switch n {
		case 2: // the first read once line1 is out
			llmWaitFile(t, filepath.Join(cwd, "r1"))
		case 3: // the second once line2 is
			if err := os.WriteFile(filepath.Join(cwd, "go"), nil, 0o600); err != nil {
				t.Error(err)
			}
			llmWaitFile(t, filepath.Join(cwd, "r2"))
		}
	})
	f := newLLMFixture(t, srv, llmOptions{baseURL: base, args: sshArgs(sshd, ""), cwd: cwd})
	f.mustTurn("go", "end_turn")
	reqs := srv.Requests()
	for id, want := range map[string]string{
		"call_read1": "line1\n[status: running]",
		"call_read2": "line2\n[status: running]",
		"call_kill":  "Killed background task bash-1 [status: killed].",
	} {
		n := map[string]int{"call_read1": 2, "call_read2": 3, "call_kill": 4}[id]
		if got := llmToolResult(t, reqs[n], id); got != want {
			t.Errorf("%s: %q, want %q", id, got, want)
		}
	}
	requireNoSurvivor(t, "the killed task", bgMark)
	fg := llmToolResult(t, reqs[5], "call_fg")
	if !strings.Contains(fg, "[timed out after 1000ms]") || !strings.Contains(fg, "[killed by signal: SIGKILL]") {
		t.Errorf("timed-out result %q", fg)
	}
	requireNoSurvivor(t, "the timed-out command", fgMark)
}

// Stopping sshd and its per-connection processes mid-command ends the call
// with an error saying the connection was lost; nothing survives on the
// host; the next command once the server is back reconnects.
func TestE2ESSHConnectionLost(t *testing.T) {
	srv := sshServer(t)
	d := startDaemon(t, acptest.ZedCapabilities(), sshArgs(srv, ""))
	sid := d.newSession(t.TempDir())
	mark := sleepMarker()
	reply := make(chan error, 1)
	before := len(d.Updates(sid))
	go func() {
		var r map[string]any
		reply <- d.Call(ctxT(t), "session/prompt", promptParams(sid, "!trap '' TERM HUP; echo ready; sleep "+mark), &r)
	}()
	d.waitFor(func() bool { return d.count(sid, "tool_call_update", "ready") > 0 })
	srv.Stop()
	select {
	case err := <-reply:
		if err != nil {
			t.Fatalf("prompt: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the prompt did not end after the server was stopped")
	}
	c := onlyCard(t, decodeUpdates(t, d.Updates(sid)[before:]))
	out := strings.Join(c.outputs, "")
	t.Logf("card output: %q", out)
	if c.final == nil || c.final.Status != "failed" || !strings.Contains(out, "dsh-acp: cannot run command: lost the connection to 127.0.0.1:") {
		t.Errorf("card after the loss: final %+v, output %q", c.final, out)
	}
	requireNoSurvivor(t, "the command after its connection was lost", mark)
	srv.Restart()
	if c := d.directTurn(sid, "echo back"); strings.Join(c.outputs, "") != "back\n" {
		t.Errorf("after the restart: %q (final %+v)", c.outputs, c.final)
	}
}

// A host whose key is not in known_hosts is refused in the card, with how
// to add it, and nothing runs.
func TestE2ESSHUnknownHostKey(t *testing.T) {
	srv := sshServer(t)
	empty := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	args := sshArgs(srv, "")
	args[5] = empty // --ssh-known-hosts
	d := startDaemon(t, acptest.ZedCapabilities(), args)
	cwd := t.TempDir()
	sid := d.newSession(cwd) // the host cannot be checked: the session opens, commands say why
	c := d.directTurn(sid, "touch ran")
	out := strings.Join(c.outputs, "")
	t.Logf("card output: %q; content: %q", out, c.contentTexts())
	if c.final == nil || c.final.Status != "failed" || !strings.Contains(out, "dsh-acp: cannot run command: refusing to connect to "+srv.Addr) {
		t.Errorf("card: final %+v, output %q", c.final, out)
	}
	if text := strings.Join(c.contentTexts(), "\n"); !strings.Contains(text, "ssh-keyscan -p") || !strings.Contains(text, "never trusts a host key on first use") {
		t.Errorf("card content does not say how to add the key: %q", text)
	}
	if _, err := os.Stat(filepath.Join(cwd, "ran")); err == nil {
		t.Error("the command ran")
	}
}

// chunkText is what the agent said (agent_message_chunk) in us.
func chunkText(us []update) string {
	var b strings.Builder
	for _, u := range us {
		if u.Kind == "agent_message_chunk" {
			b.WriteString(u.ChunkText)
		}
	}
	return b.String()
}

// On a host whose PATH lacks bwrap, what the user is told about the
// sandbox speaks of that host, never of this machine: the notice after
// session/new names the host and the level to choose; the first confined
// command's card names the host and the missing program (and the command
// does not run); /sandbox says what the host lacks and the host's fix.
func TestE2ESSHSandboxAdviceNamesTheHost(t *testing.T) {
	path := pathWithout(t, "bwrap")
	srv := sshdtest.StartWith(t, sshdtest.Options{SetEnv: []string{"XDG_STATE_HOME=" + t.TempDir(), "PATH=" + path}})
	d := startDaemon(t, optedIn("notices"), sshArgs(srv, ""))
	cwd := t.TempDir()
	sid := d.newSession(cwd)
	d.waitFor(func() bool { return d.count(sid, "notice", "without a sandbox") > 0 })
	ns := updatesOf[noticeUpdate](t, d, sid, "notice")
	if len(ns) != 1 || !strings.Contains(ns[0].Description, "run on 127.0.0.1 without a sandbox") ||
		!strings.Contains(ns[0].Description, "/sandbox workspace") || strings.Contains(ns[0].Description, "apt install") {
		t.Errorf("notices %+v", ns)
	}
	d.prompt(sid, "/sandbox workspace")
	c := d.directTurn(sid, "echo ran > ran.txt")
	wantReason(t, c, "Not run: sandbox level workspace cannot be built on the host 127.0.0.1: the host has no bwrap on its PATH")
	if _, err := os.Stat(filepath.Join(cwd, "ran.txt")); err == nil {
		t.Error("the refused command ran on the host")
	}
	before := len(d.Updates(sid))
	d.prompt(sid, "/sandbox")
	got := chunkText(decodeUpdates(t, d.Updates(sid)[before:]))
	for _, want := range []string{"Confined levels cannot be built on the host 127.0.0.1: the host has no bwrap on its PATH", "Install bubblewrap on 127.0.0.1", "(now " + path} {
		if !strings.Contains(got, want) {
			t.Errorf("/sandbox lacks %q: %q", want, got)
		}
	}
	if strings.Contains(got, "built here") || strings.Contains(got, "bubblewrap util-linux") {
		t.Errorf("/sandbox gives this machine's advice: %q", got)
	}
}
