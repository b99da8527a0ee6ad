package main

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/eventually"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
	"github.com/dsh-acp/dsh-acp/replay"
)

// chatEnv is an environment for a chat under test: a private state
// directory, no model, no user rules, no colour, plus extra.
func chatEnv(t *testing.T, state string, extra ...string) []string {
	env := append(os.Environ(), "DSH_STATE_DIR="+state, "DSH_API_KEY=", "DEEPSEEK_API_KEY=", "DSH_BASE_URL=", "DSH_MODEL=",
		"DSH_MODE=", "DSH_LOG_FILE=", "NO_COLOR=1", "XDG_CONFIG_HOME="+t.TempDir(), "GORACE=atexit_sleep_ms=0", "TERM=dumb")
	return append(env, extra...)
}

var sessionIDRE = regexp.MustCompile(`session (\d{8}T\d{6}\.\d{6}Z-[0-9a-f]{16})`)

// bannerSession is the session id the banner in out names.
func bannerSession(t *testing.T, out string) string {
	t.Helper()
	m := sessionIDRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no session id in the banner:\n%s", out)
	}
	return m[1]
}

// noLogLines fails when anything the agent logged reached the screen.
func noLogLines(t *testing.T, screen string) {
	t.Helper()
	if strings.Contains(screen, `"level"`) || strings.Contains(screen, `"msg"`) {
		t.Errorf("a log line reached the screen:\n%s", screen)
	}
}

// waitProcs waits until n processes carry marker (the command runs).
func waitProcs(t *testing.T, marker string, n int) {
	t.Helper()
	eventually.True(t, 20*time.Second, func() bool {
		procs, err := acptest.ProcsWithMarker(marker)
		if err != nil {
			t.Fatal(err)
		}
		return len(procs) >= n
	}, "fewer than %d processes with the marker", n)
}

// `dsh-acp sessions` lists chat and editor sessions (id, updated, from,
// cwd, title); `chat --resume ID` draws the session's history, continues
// it in the directory it recorded, and names it in the banner.
func TestChatSessionsAndResume(t *testing.T) {
	bin := acptest.BuildBinary(t)
	state := t.TempDir()
	projectDir := t.TempDir()
	first := exec.Command(bin, "chat")
	first.Dir, first.Env, first.Stdin = projectDir, chatEnv(t, state), strings.NewReader("!echo first-run\n")
	out, err := first.CombinedOutput()
	if err != nil {
		t.Fatalf("chat: %v\n%s", err, out)
	}
	id := bannerSession(t, string(out))
	editorID := writeEditorSession(t, state, "/srv/editor-project", "an editor prompt")

	list := exec.Command(bin, "sessions")
	list.Env = chatEnv(t, state)
	listed, err := list.CombinedOutput()
	if err != nil {
		t.Fatalf("sessions: %v\n%s", err, listed)
	}
	lines := strings.Split(strings.TrimSpace(string(listed)), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(lines[0], "TITLE") {
		t.Fatalf("sessions:\n%s", listed)
	}
	want := map[string][]string{id: {"chat", projectDir, "!echo first-run"}, editorID: {"editor", "/srv/editor-project", "an editor prompt"}}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		w, ok := want[f[0]]
		if !ok || f[3] != w[0] || f[4] != w[1] || !strings.HasSuffix(l, w[2]) {
			t.Errorf("listed %q, want id, updated, %v", l, w)
		}
		delete(want, f[0])
	}
	if len(want) > 0 {
		t.Errorf("not listed: %v\n%s", want, listed)
	}

	// Resumed from another directory, the session runs where it ran.
	p := startTerm(t, t.TempDir(), bin, tuiEnv(t, state), "chat", "--resume", id)
	p.expect("> !echo first-run")
	p.expect("│ first-run")
	p.expect("dsh-acp chat · ")
	p.expect("Enter sends")
	p.typeIn("!pwd\r")
	p.expect("│ " + projectDir)
	p.expect("└ ✓ exit 0")
	p.quit()
	p.expect("resume: dsh-acp chat --resume " + id)
	prompts := journaledPrompts(t, state, id)
	if strings.Join(prompts, "|") != "!echo first-run|!pwd" {
		t.Errorf("the resumed session's prompts: %q", prompts)
	}

	bad := exec.Command(bin, "chat", "--resume", "20990101T000000.000000Z-0000000000000000")
	bad.Env = chatEnv(t, state)
	if msg, err := bad.CombinedOutput(); err == nil || !strings.Contains(string(msg), "no session 20990101T000000.000000Z-0000000000000000 in") {
		t.Errorf("resume of an unknown id: %v\n%s", err, msg)
	}
}

// writeEditorSession journals a session the way an editor's daemon does,
// in <state>/sessions.
func writeEditorSession(t *testing.T, state, cwd, prompt string) string {
	t.Helper()
	store, err := replay.OpenStore(state)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	id := replay.NewSessionID()
	j, err := store.Create(id, cwd, "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Append(event.UserPrompt{Text: prompt}); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	return id
}

// An agent that dies before it answers is reported by its own words, not
// by the connection's "peer disconnected".
func TestChatStartupFailureShowsTheCause(t *testing.T) {
	bin := acptest.BuildBinary(t)
	state := t.TempDir()
	cmd := exec.Command(bin, "chat", "--agent", "sh", "-c", "echo 'boom: the config is bad' >&2; exit 3")
	cmd.Env = chatEnv(t, state)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("chat succeeded:\n%s", out)
	}
	for _, want := range []string{"the agent did not start: the agent exited (exit status 3):", "boom: the config is bad", filepath.Join(state, "chat", "agent.log")} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "peer disconnected") {
		t.Errorf("the connection's error hides the cause:\n%s", out)
	}

	// This daemon refusing its state: the refusal is what the user reads.
	sessions := filepath.Join(state, "chat", "sessions")
	if err := os.MkdirAll(sessions, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sessions, 0o777); err != nil {
		t.Fatal(err)
	}
	self := exec.Command(bin, "chat")
	self.Env, self.Stdin = chatEnv(t, state), strings.NewReader("!true\n")
	out, err = self.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "is writable by its group or others") {
		t.Errorf("chat over a world-writable sessions directory: %v\n%s", err, out)
	}
}

// Run bare on a terminal, dsh-acp says what it is instead of parsing the
// user's typing as JSON-RPC.
func TestBareOnATerminalPrintsAHint(t *testing.T) {
	bin := acptest.BuildBinary(t)
	p := startTerm(t, t.TempDir(), bin, chatEnv(t, t.TempDir()))
	p.expect("dsh-acp is an ACP agent for editors")
	p.expect("run: dsh-acp chat")
	if code := p.wait(); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if n := strings.Count(strings.TrimSpace(p.output()), "\n"); n != 1 {
		t.Errorf("%d lines, want 2:\n%s", n+1, p.output())
	}
}

// `replay` of an id that is not there says so in words, naming where it
// looked.
func TestReplayUnknownID(t *testing.T) {
	id := "20990101T000000.000000Z-0000000000000000"
	_, errOut, err := runBinary(t, "", "replay", id)
	if err == nil || !strings.Contains(errOut, "dsh-acp replay: no session "+id+" in ") || strings.Contains(errOut, "statat") {
		t.Errorf("replay of an unknown id: %v: %s", err, errOut)
	}
}

// A state directory others can write (/tmp) is refused with words that
// say what to do.
func TestSharedStateDirRefused(t *testing.T) {
	_, errOut, err := runBinary(t, "", "--state-dir", "/tmp")
	if err == nil || !strings.Contains(errOut, "state directory /tmp is writable by other users") || !strings.Contains(errOut, "--state-dir") {
		t.Errorf("--state-dir /tmp: %v: %s", err, errOut)
	}
}

// The daemon flags chat forwards are exactly those set, each repeat of a
// repeatable flag on its own, and never its own flags.
func TestChatForwardsTheFlagsSet(t *testing.T) {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	cf := addConfigFlags(fs, func(string) (string, bool) { return "", false })
	fs.String("cwd", "", "")
	args := []string{"--cwd", "/w", "--base-url", "http://127.0.0.1:1", "--allow-env", "A", "--allow-env", "B", "--timeout", "5s", "--state-dir", "/s"}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	got := cf.forwarded(fs, "state-dir")
	want := []string{"--allow-env=A", "--allow-env=B", "--base-url=http://127.0.0.1:1", "--timeout=5s"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("forwarded %q, want %q", got, want)
	}
}

// Piped input: a question takes the next line; a line that answers nothing
// is refused (and is not sent as a prompt later); --approve allow answers
// for the user.
func TestChatPipedQuestionAndApprove(t *testing.T) {
	bin := acptest.BuildBinary(t)
	call := func(file string) llmtest.Response {
		return llmtest.Calls(llmtest.Call{ID: "c-" + file, Name: "bash", Args: `{"command":"touch ` + file + `","description":"Make it"}`})
	}
	model := llmtest.New(t, call("declined-file"), llmtest.Reply("not made"), call("approved-file"), llmtest.Reply("made"))
	cwd := t.TempDir()
	env := chatEnv(t, t.TempDir(), "DSH_API_KEY=test-key")
	asked := exec.Command(bin, "chat", "--base-url", model.URL(), "--mode", "ask")
	asked.Dir, asked.Env, asked.Stdin = cwd, env, strings.NewReader("make it\nmaybe\nn\n")
	out, err := asked.CombinedOutput()
	if err != nil {
		t.Fatalf("chat: %v\n%s", err, out)
	}
	for _, want := range []string{`allow "touch declined-file"? [y] Allow once`, `"maybe" is not an option: answer y, `, "dsh-acp: declined by the user", "not made"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	approved := exec.Command(bin, "chat", "--base-url", model.URL(), "--mode", "ask", "--approve", "allow")
	approved.Dir, approved.Env, approved.Stdin = cwd, env, strings.NewReader("make another\n")
	if out, err := approved.CombinedOutput(); err != nil || !strings.Contains(string(out), "made") {
		t.Fatalf("chat --approve allow: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(cwd, "declined-file")); err == nil {
		t.Error("a declined command ran")
	}
	if _, err := os.Stat(filepath.Join(cwd, "approved-file")); err != nil {
		t.Errorf("the approved command did not run: %v", err)
	}
	reqs := model.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4 (maybe must not be a prompt)", len(reqs))
	}
}
