package chat

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	sdk "github.com/coder/acp-go-sdk"
)

// testModel is a terminal model drawing into a buffer, its session open.
func testModel(t *testing.T) (*terminalModel, *bytes.Buffer, chan string) {
	var out bytes.Buffer
	r := NewRenderer(&out, false)
	r.SetWidth(80)
	r.KeepPlan()
	prompts := make(chan string, 1)
	m := newTerminalModel(r, loadHistory(filepath.Join(t.TempDir(), "history")), newInterrupter(time.Second), prompts, 80)
	m.Update(openedMsg{})
	return m, &out, prompts
}

func typeText(m *terminalModel, s string) {
	for _, c := range s {
		m.Update(tea.KeyPressMsg{Code: c, Text: string(c)})
	}
}

func press(m *terminalModel, code rune) { m.Update(tea.KeyPressMsg{Code: code}) }

func view(m *terminalModel) string { return ansi.Strip(m.View().Content) }

// Enter sends the input (echoed as the user's prompt); a long paste
// stands as a placeholder and is sent verbatim; Up recalls it.
func TestTerminalModelSendsAndRecalls(t *testing.T) {
	m, out, prompts := testModel(t)
	typeText(m, "hello")
	press(m, tea.KeyEnter)
	if got := <-prompts; got != "hello" {
		t.Errorf("sent %q", got)
	}
	if !strings.Contains(out.String(), "> hello\n") {
		t.Errorf("not echoed: %q", out.String())
	}
	m.Update(busyMsg{false})
	big := strings.Repeat("word\t", 300)
	m.Update(tea.PasteMsg{Content: "see: " + big})
	if v := view(m); !strings.Contains(v, "[pasted 1505 characters, 1 lines #1]") {
		t.Errorf("view after a long paste:\n%s", v)
	}
	press(m, tea.KeyEnter)
	if got := <-prompts; got != "see: "+big {
		t.Errorf("sent %d characters, want the paste whole", len(got))
	}
	m.Update(busyMsg{false})
	press(m, tea.KeyUp)
	press(m, tea.KeyUp)
	if v := view(m); !strings.Contains(v, "> hello") {
		t.Errorf("two Ups do not show the first prompt:\n%s", v)
	}
	press(m, tea.KeyDown)
	press(m, tea.KeyDown)
	if !m.ed.empty() {
		t.Errorf("Down past the newest does not come back to the empty input: %q", m.ed.value())
	}
}

// A question takes one key: an offered one answers it, any other is
// refused in place (the question stays, nothing is sent as a prompt).
func TestTerminalModelAnswersByOneKey(t *testing.T) {
	m, _, prompts := testModel(t)
	m.Update(busyMsg{true})
	q := &pendingQuestion{question: question{title: "rm x", choices: choicesOf([]sdk.PermissionOption{
		{OptionId: "ok", Kind: sdk.PermissionOptionKindAllowOnce, Name: "Allow once"},
		{OptionId: "no", Kind: sdk.PermissionOptionKindRejectOnce, Name: "Reject"},
	})}, reply: make(chan sdk.PermissionOption, 1)}
	m.Update(askMsg{q})
	if v := view(m); !strings.Contains(v, `? allow "rm x"? [y] Allow once  [n] Reject`) || !strings.Contains(v, "press y or n ›") {
		t.Errorf("question view:\n%s", v)
	}
	typeText(m, "a")
	if v := view(m); !strings.Contains(v, "a is not an option: press y or n") {
		t.Errorf("refusal not shown:\n%s", v)
	}
	press(m, tea.KeyEnter)
	select {
	case o := <-q.reply:
		t.Fatalf("answered %q by a key not offered", o.OptionId)
	case p := <-prompts:
		t.Fatalf("sent %q as a prompt", p)
	default:
	}
	typeText(m, "n")
	if o := <-q.reply; o.OptionId != "no" {
		t.Errorf("n answered %q", o.OptionId)
	}
	if m.q != nil {
		t.Error("the question is still shown")
	}
}

// While a turn runs the view shows a spinner saying what runs, and the
// standing plan as a checklist.
func TestTerminalModelShowsSpinnerAndPlan(t *testing.T) {
	m, _, _ := testModel(t)
	m.Update(busyMsg{true})
	m.r.Update(planUpdate(entry("look", sdk.PlanEntryStatusCompleted), entry("fix", sdk.PlanEntryStatusInProgress), entry("test", sdk.PlanEntryStatusPending)))
	v := view(m)
	for _, want := range []string{"Plan\n  ✓ look\n  ▸ fix\n  · test", " thinking · 0s"} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
	if !strings.ContainsAny(v, strings.Join(spinnerFrames, "")) {
		t.Errorf("no spinner frame:\n%s", v)
	}
	m.r.Update(sdk.SessionUpdate{ToolCall: &sdk.SessionUpdateToolCall{ToolCallId: "c", Title: "sleep 30"}})
	if v := view(m); !strings.Contains(v, " running sleep 30 · ") {
		t.Errorf("view while a card runs:\n%s", v)
	}
}

// The editor edits like a readline: words, lines, joins, and a view
// wrapped at word boundaries.
func TestEditor(t *testing.T) {
	e := newEditor()
	e.insert("one two three")
	e.edit("ctrl+w", "")
	e.edit("ctrl+j", "")
	e.insert("four")
	e.edit("up", "")
	e.edit("end", "")
	e.edit("delete", "") // joins the next line
	if got := e.value(); got != "one two four" {
		t.Errorf("value %q", got)
	}
	e.set("alpha beta gamma delta")
	v := ansi.Strip(e.view(16, "> ", "", style{}))
	if v != "> alpha beta \n  gamma delta " {
		t.Errorf("view:\n%q", v)
	}
}
