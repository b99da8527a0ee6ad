package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

// tuiEnv is chatEnv on a terminal that draws (not TERM=dumb).
func tuiEnv(t *testing.T, state string, extra ...string) []string {
	return append(chatEnv(t, state, "TERM=xterm-256color"), extra...)
}

// paste is text as a terminal sends it in bracketed-paste mode.
func paste(text string) string { return "\x1b[200~" + text + "\x1b[201~" }

// screenLines is the terminal output as lines, escape sequences removed.
func screenLines(out string) []string {
	return strings.Split(strings.ReplaceAll(ansi.Strip(out), "\r", ""), "\n")
}

// journaledPrompts are the prompts the chat session id journaled.
func journaledPrompts(t *testing.T, state, id string) []string {
	t.Helper()
	l, err := loadForReplay(id, func(k string) (string, bool) {
		if k == "DSH_STATE_DIR" {
			return state, true
		}
		return "", false
	})
	if err != nil {
		t.Fatal(err)
	}
	var prompts []string
	for _, ev := range l.Events {
		if p, ok := ev.(event.UserPrompt); ok {
			prompts = append(prompts, p.Text)
		}
	}
	return prompts
}

var resumeRE = regexp.MustCompile(`resume: dsh-acp chat --resume (\S+)`)

// On a terminal: the banner is one line within 80 columns; Ctrl-C clears
// the input (nothing is sent); a command runs as a card; Up recalls the
// last prompt, in this chat and in the next (the history is private in
// the state directory); Ctrl-D quits, naming the session to resume; the
// agent's logs go to <state>/chat/agent.log, never the screen.
func TestChatTerminalInputAndHistory(t *testing.T) {
	bin := acptest.BuildBinary(t)
	state := t.TempDir()
	p := startTerm(t, t.TempDir(), bin, tuiEnv(t, state, "DSH_LOG_LEVEL=debug"), "chat", "--sandbox=off")
	p.expect("dsh-acp chat · model deepseek-flash · mode ask · sandbox off")
	p.expect("Enter sends")
	p.typeIn("abandoned words")
	p.expect("abandoned words")
	p.typeIn("\x03")
	p.expect("Ctrl-C again within a second quits")
	time.Sleep(1100 * time.Millisecond) // not a double press with the next
	p.typeIn("!echo typed-$((20+1))\r")
	p.expect("┌ echo typed-$((20+1))")
	p.expect("│ typed-21")
	p.expect("└ ✓ exit 0")
	p.expect("Enter sends")
	p.typeIn("\x1b[A") // Up
	p.typeIn("\r")
	p.expect("┌ echo typed-$((20+1))")
	p.expect("└ ✓ exit 0")
	p.quit()
	screen := p.output()
	m := resumeRE.FindStringSubmatch(ansi.Strip(screen))
	if m == nil {
		t.Fatalf("no resume line at the end:\n%s", screen)
	}
	if got := journaledPrompts(t, state, m[1]); strings.Join(got, "|") != "!echo typed-$((20+1))|!echo typed-$((20+1))" {
		t.Errorf("prompts sent: %q (the line cleared by Ctrl-C must not be one)", got)
	}
	banner := ""
	for _, l := range screenLines(screen) {
		if strings.HasPrefix(l, "dsh-acp chat · ") {
			banner = strings.TrimRight(l, " ")
			break
		}
	}
	if w := ansi.StringWidth(banner); banner == "" || w > 80 {
		t.Errorf("the banner takes %d columns, want one line within 80: %q", w, banner)
	}
	noLogLines(t, screen)
	log, err := os.ReadFile(filepath.Join(state, "chat", "agent.log"))
	if err != nil || !strings.Contains(string(log), `"msg":"serving"`) {
		t.Errorf("the agent's log is not in <state>/chat/agent.log (%v):\n%s", err, log)
	}
	hist := filepath.Join(state, "chat", "history")
	if fi, err := os.Stat(hist); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("history file %s: %v %v, want mode 0600", hist, fi, err)
	}

	// The next chat recalls the prompt of the last one.
	p = startTerm(t, t.TempDir(), bin, tuiEnv(t, state), "chat", "--sandbox=off")
	p.expect("Enter sends")
	p.typeIn("\x1b[A")
	p.typeIn("\r")
	p.expect("│ typed-21")
	p.quit()
}

// Bracketed paste: a 100 000-character paste reaches the model whole, and
// a multi-line paste is one prompt, sent by Enter.
func TestChatTerminalPaste(t *testing.T) {
	bin := acptest.BuildBinary(t)
	model := llmtest.New(t, llmtest.Reply("got the big one"), llmtest.Reply("got three lines"))
	var big strings.Builder
	for i := 0; big.Len() < 100000; i++ {
		line := strings.Repeat(string(rune('a'+i%26)), 999)
		big.WriteString(line[:min(999, 100000-big.Len()-1)] + "\n")
	}
	bigText := strings.TrimSuffix(big.String(), "\n") + "!"
	if len(bigText) != 100000 {
		t.Fatalf("the paste is %d characters", len(bigText))
	}
	state := t.TempDir()
	p := startTerm(t, t.TempDir(), bin, tuiEnv(t, state, "DSH_API_KEY=test-key"), "chat", "--base-url", model.URL())
	p.expect("Enter sends")
	p.typeIn(paste(bigText))
	p.expect("[pasted 100000 characters, 100 lines #1]")
	p.typeIn("\r")
	p.expect("got the big one")
	p.expect("Enter sends")
	p.typeIn(paste("line one\r\nline two\r\nline three"))
	p.expect("line three")
	p.typeIn("\r")
	p.expect("got three lines")
	p.quit()
	reqs := model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2 (one per paste)", len(reqs))
	}
	for i, want := range []string{bigText, "line one\nline two\nline three"} {
		msgs := reqs[i].Messages
		last := msgs[len(msgs)-1]
		if last.Role != "user" || !strings.Contains(last.Content, want) {
			t.Errorf("request %d: the last message (%s, %d characters) does not hold the paste (%d characters) whole", i, last.Role, len(last.Content), len(want))
		}
	}
}

// spinning reports whether out, between the first from and the next to
// after it, shows a spinner frame and says what.
func spinning(out, from, what, to string) bool {
	i := strings.Index(out, from)
	if i < 0 {
		return false
	}
	j := strings.Index(out[i:], to)
	if j < 0 {
		return false
	}
	seg := out[i : i+j]
	return strings.ContainsAny(seg, "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏") && strings.Contains(seg, what)
}

// While the model is slow to answer, and while a command runs, a spinner
// says what is going on and for how long.
func TestChatTerminalSpinner(t *testing.T) {
	bin := acptest.BuildBinary(t)
	slow := llmtest.Reply("at last")
	slow.Delay = 3 * time.Second
	model := llmtest.New(t, slow)
	p := startTerm(t, t.TempDir(), bin, tuiEnv(t, t.TempDir(), "DSH_API_KEY=test-key"), "chat", "--base-url", model.URL(), "--sandbox=off")
	p.expect("Enter sends")
	p.typeIn("hello\r")
	p.expect("at last")
	p.expect("Enter sends")
	p.typeIn("!sleep 3\r")
	p.expect("└ ✓ exit 0")
	p.typeIn("\x04")
	p.wait()
	out := ansi.Strip(p.output())
	if !spinning(out, "> hello", "thinking · ", "at last") {
		t.Error("no spinner frame saying thinking · 2s while the model was slow")
	}
	if !spinning(out, "┌ sleep 3", "running sleep 3 · ", "└ ✓ exit 0") {
		t.Error("no spinner frame saying running sleep 3 while the command ran")
	}
}

// A permission question follows its card's header and is answered by one
// key, without Enter; a key that is not offered is refused in place and
// never becomes a prompt.
func TestChatTerminalQuestion(t *testing.T) {
	bin := acptest.BuildBinary(t)
	model := llmtest.New(t,
		llmtest.Calls(llmtest.Call{ID: "call_1", Name: "bash", Args: `{"command":"touch declined-file","description":"Make a file"}`}),
		llmtest.Reply("not made"),
		llmtest.Calls(llmtest.Call{ID: "call_2", Name: "bash", Args: `{"command":"touch allowed-file","description":"Make another"}`}),
		llmtest.Reply("made"),
	)
	cwd := t.TempDir()
	p := startTerm(t, cwd, bin, tuiEnv(t, t.TempDir(), "DSH_API_KEY=test-key"), "chat", "--base-url", model.URL(), "--mode", "ask")
	p.expect("Enter sends")
	p.typeIn("make the file\r")
	p.expect("┌ touch declined-file")
	p.expect(`? allow "touch declined-file"? [y] Allow once`)
	p.expect("press ")
	p.typeIn("q")
	p.expect("q is not an option: press ")
	p.typeIn("n")
	p.expect("→ Reject")
	p.expect("│ dsh-acp: declined by the user")
	p.expect("not made")
	p.expect("Enter sends")
	p.typeIn("make the other\r")
	p.expect("┌ touch allowed-file")
	p.expect(`? allow "touch allowed-file"?`)
	p.typeIn("y")
	p.expect("→ Allow once")
	p.expect("└ ✓ exit 0")
	p.expect("made")
	p.quit()
	if _, err := os.Stat(filepath.Join(cwd, "declined-file")); err == nil {
		t.Error("a declined command ran")
	}
	if _, err := os.Stat(filepath.Join(cwd, "allowed-file")); err != nil {
		t.Errorf("the allowed command did not run: %v", err)
	}
	reqs := model.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4", len(reqs))
	}
	for _, r := range reqs {
		for _, m := range r.Messages {
			if m.Role == "user" && strings.TrimSpace(m.Content) == "q" {
				t.Errorf("the refused key became a prompt: %+v", m)
			}
		}
	}
}

// During a turn one Ctrl-C cancels it (the card says why and carries the
// signal), and two within a second end the chat at once, killing what ran.
func TestChatTerminalCtrlC(t *testing.T) {
	bin := acptest.BuildBinary(t)
	p := startTerm(t, t.TempDir(), bin, tuiEnv(t, t.TempDir()), "chat")
	p.expect("Enter sends")
	marker := acptest.NewMarker()
	p.typeIn("!export M=" + marker + "; echo started; sleep 600\r")
	waitProcs(t, marker, 1)
	// Running, not just spawned: a sandbox still being set up has no
	// command for the TERM to reach (executor/sandbox's known limits).
	p.expect("│ started")
	p.typeIn("\x03")
	p.expect("cancelling… (Ctrl-C again within a second exits)")
	p.expect("│ dsh-acp: cancelled: the user stopped the turn while this call ran")
	p.expect("└ ✗ SIGTERM")
	p.expect("[cancelled]")
	p.expect("Enter sends")
	time.Sleep(1100 * time.Millisecond)

	second := acptest.NewMarker()
	p.typeIn("!export M=" + second + "; sleep 600\r")
	waitProcs(t, second, 1)
	p.typeIn("\x03")
	p.expect("cancelling…")
	p.typeIn("\x03") // within the second: the chat ends
	p.expect("interrupted twice: exiting")
	if code := p.wait(); code != 0 {
		t.Errorf("exit %d after a double Ctrl-C", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if left, err := acptest.WaitNoProcsWithMarker(ctx, second); err != nil {
		t.Errorf("the command outlived the chat: %+v %v", left, err)
	}
}

// planAgent is an ACP agent in sh: each prompt's turn sends a plan (the
// first prompt's, then the second's, replacing it) and a line of text.
const planAgent = `n=0
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/^.*"id":\([0-9]*\),"method".*$/\1/p')
  case "$line" in
  *'"method":"initialize"'*)
    echo '{"jsonrpc":"2.0","id":'$id',"result":{"protocolVersion":1,"agentCapabilities":{}}}' ;;
  *'"method":"session/new"'*)
    echo '{"jsonrpc":"2.0","id":'$id',"result":{"sessionId":"s1"}}' ;;
  *'"method":"session/prompt"'*)
    n=$((n+1))
    if [ $n = 1 ]; then
      entries='{"content":"read the code","priority":"high","status":"completed"},{"content":"write the fix","priority":"medium","status":"in_progress"},{"content":"run the tests","priority":"low","status":"pending"}'
    else
      entries='{"content":"SHIP IT","priority":"medium","status":"in_progress"},{"content":"CELEBRATE","priority":"low","status":"pending"}'
    fi
    echo '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"plan","entries":['"$entries"']}}}'
    echo '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"turn '$n' done"}}}}'
    echo '{"jsonrpc":"2.0","id":'$id',"result":{"stopReason":"end_turn"}}' ;;
  esac
done`

// The agent's plan stands above the input as a checklist (✓ completed,
// ▸ in progress, · pending), redrawn by each plan update (that it replaces
// the last one's entries is TestPlanIsAChecklist's: the terminal's
// output here is redrawn cells, not a screen).
func TestChatTerminalDrawsThePlan(t *testing.T) {
	bin := acptest.BuildBinary(t)
	p := startTerm(t, t.TempDir(), bin, tuiEnv(t, t.TempDir()), "chat", "--agent", "sh", "-c", planAgent)
	p.expect("Enter sends")
	p.typeIn("go\r")
	p.expect("turn 1 done")
	p.expect("Plan")
	p.expect("✓ read the code")
	p.expect("▸ write the fix")
	p.expect("· run the tests")
	p.expect("Enter sends")
	p.typeIn("again\r")
	p.expect("turn 2 done")
	p.expect("▸ SHIP IT")
	p.expect("· CELEBRATE")
	p.quit()
}

// On a terminal, replay draws as the chat does there: by lines wrapped at
// word boundaries to the terminal's width (80 columns here).
func TestReplayOnATerminalWrapsAtWords(t *testing.T) {
	bin := acptest.BuildBinary(t)
	state := t.TempDir()
	words := strings.TrimSpace(strings.Repeat("wrapping words21 ", 8)) // 135 columns
	chat := exec.Command(bin, "chat")
	chat.Dir, chat.Env, chat.Stdin = t.TempDir(), chatEnv(t, state), strings.NewReader("!echo "+words+"\n")
	out, err := chat.CombinedOutput()
	if err != nil {
		t.Fatalf("chat: %v\n%s", err, out)
	}
	id := bannerSession(t, string(out))
	p := startTerm(t, t.TempDir(), bin, tuiEnv(t, state), "replay", id)
	if code := p.wait(); code != 0 {
		t.Fatalf("replay: exit %d\n%s", code, p.output())
	}
	var card []string
	for _, l := range screenLines(p.output()) {
		if w := ansi.StringWidth(l); w > 80 {
			t.Errorf("a line of %d columns: %q", w, l)
		}
		if strings.HasPrefix(l, "│ ") {
			card = append(card, strings.TrimPrefix(l, "│ "))
		}
	}
	if len(card) != 2 || strings.Join(card, " ") != words {
		t.Errorf("the output lines, not wrapped at words behind the card's bar: %q", card)
	}
}

// /help is answered by the daemon, with no model and no key.
func TestChatTerminalHelpWithoutAKey(t *testing.T) {
	bin := acptest.BuildBinary(t)
	p := startTerm(t, t.TempDir(), bin, tuiEnv(t, t.TempDir()), "chat")
	p.expect("Enter sends")
	p.typeIn("/help\r")
	p.expect("/sandbox")
	p.quit()
	if strings.Contains(p.output(), "Authentication required") {
		t.Errorf("/help asked for a key:\n%s", p.output())
	}
}
