package chat

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	sdk "github.com/coder/acp-go-sdk"
)

// Drawing by lines, text is wrapped at word boundaries to the width, a
// card's output keeps its bar on continuation lines, and the line still
// being written is held back (Pending) until it ends.
func TestRendererWrapsAtWords(t *testing.T) {
	var out bytes.Buffer
	r := NewRenderer(&out, false)
	r.SetWidth(20)
	r.Update(sdk.UpdateAgentMessageText("hello world21 and more words here\nnext"))
	if got := r.Pending(); got != "next" {
		t.Errorf("pending %q, want the unfinished line", got)
	}
	r.Update(sdk.SessionUpdate{ToolCall: &sdk.SessionUpdateToolCall{ToolCallId: "c1", Title: "echo", Meta: map[string]any{"terminal_info": map[string]any{}}}})
	r.Update(sdk.SessionUpdate{ToolCallUpdate: &sdk.SessionToolCallUpdate{ToolCallId: "c1",
		Meta: map[string]any{"terminal_output": map[string]any{"data": "alpha beta gamma delta epsilon\npart"}}}})
	if got := r.Pending(); got != "│ part" {
		t.Errorf("pending %q, want the card's unfinished line", got)
	}
	r.Update(sdk.SessionUpdate{ToolCallUpdate: &sdk.SessionToolCallUpdate{ToolCallId: "c1", Status: status(sdk.ToolCallStatusCompleted),
		Meta: map[string]any{"terminal_exit": map[string]any{"exit_code": float64(0)}}}})
	want := "hello world21 and\nmore words here\nnext\n\n" +
		"┌ echo\n" +
		"│ alpha beta gamma\n│ delta epsilon\n" +
		"│ part\n" +
		"└ ✓ exit 0\n"
	if out.String() != want {
		t.Errorf("drawn:\n%s\nwant:\n%s", out.String(), want)
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if w := ansi.StringWidth(l); w > 20 {
			t.Errorf("line %q is %d columns wide", l, w)
		}
	}
	if r.Pending() != "" {
		t.Errorf("pending after the card ended: %q", r.Pending())
	}
}

// With colour the model's markdown is styled a line at a time (a heading
// bold without its hashes, inline code, a bullet, a fenced block left
// alone); without colour it is left as written.
func TestRendererStylesMarkdown(t *testing.T) {
	text := "# Title\nsome `code` and **bold**\n- item\n```\n# not a heading\n```\n"
	var plain, colour bytes.Buffer
	for _, c := range []struct {
		out   *bytes.Buffer
		color bool
	}{{&plain, false}, {&colour, true}} {
		r := NewRenderer(c.out, c.color)
		r.SetWidth(80)
		r.Update(sdk.UpdateAgentMessageText(text))
		r.EndTurn(sdk.StopReasonEndTurn)
	}
	if plain.String() != text {
		t.Errorf("without colour:\n%q\nwant it as written:\n%q", plain.String(), text)
	}
	got := colour.String()
	for _, want := range []string{"\x1b[1mTitle\x1b[0m\n", "\x1b[36mcode\x1b[0m", "\x1b[1mbold\x1b[0m", "\x1b[33m•\x1b[0m item", "\x1b[36m# not a heading\x1b[0m"} {
		if !strings.Contains(got, want) {
			t.Errorf("styled text lacks %q:\n%q", want, got)
		}
	}
}

// The banner is one line within the width: what does not fit is left out
// from the end (the session id before the model); streaming, it is whole.
func TestBannerFitsTheWidth(t *testing.T) {
	facts := []string{"model deepseek-flash", "mode ask", "sandbox workspace-network", "session 20261204T061500.123456Z-0123456789abcdef"}
	var out bytes.Buffer
	r := NewRenderer(&out, false)
	r.SetWidth(80)
	r.Banner(facts)
	if got := out.String(); got != "dsh-acp chat · model deepseek-flash · mode ask · sandbox workspace-network\n" {
		t.Errorf("banner at 80 columns: %q", got)
	}
	out.Reset()
	r = NewRenderer(&out, false)
	r.Banner(facts, "Ctrl-D quits")
	if !strings.HasSuffix(out.String(), "session 20261204T061500.123456Z-0123456789abcdef · Ctrl-D quits\n") {
		t.Errorf("streaming banner: %q", out.String())
	}
}

func planUpdate(entries ...sdk.PlanEntry) sdk.SessionUpdate {
	return sdk.SessionUpdate{Plan: &sdk.SessionUpdatePlan{Entries: entries}}
}

func entry(content string, s sdk.PlanEntryStatus) sdk.PlanEntry {
	return sdk.PlanEntry{Content: content, Status: s, Priority: sdk.PlanEntryPriorityMedium}
}

// A plan is a checklist: ✓ completed, ▸ in progress, · pending. Printed
// where the drawing streams (replay); kept and replaced wholesale by each
// update where the terminal shows it live; an empty plan clears it.
func TestPlanIsAChecklist(t *testing.T) {
	var out bytes.Buffer
	r := NewRenderer(&out, false)
	r.Update(planUpdate(entry("read the code", sdk.PlanEntryStatusCompleted), entry("write the fix", sdk.PlanEntryStatusInProgress), entry("run the tests", sdk.PlanEntryStatusPending)))
	want := "Plan\n  ✓ read the code\n  ▸ write the fix\n  · run the tests\n"
	if out.String() != want {
		t.Errorf("printed plan:\n%s\nwant:\n%s", out.String(), want)
	}

	out.Reset()
	live := NewRenderer(&out, false)
	live.KeepPlan()
	live.Update(planUpdate(entry("a", sdk.PlanEntryStatusPending)))
	live.Update(planUpdate(entry("a", sdk.PlanEntryStatusCompleted), entry("b", sdk.PlanEntryStatusInProgress)))
	if got := strings.Join(live.Plan(), "\n"); got != "Plan\n  ✓ a\n  ▸ b" {
		t.Errorf("standing plan:\n%s", got)
	}
	live.Update(planUpdate())
	if len(live.Plan()) != 0 || out.Len() != 0 {
		t.Errorf("after an empty plan: %q, printed %q", live.Plan(), out.String())
	}
}

// The history keeps prompts across sessions in a private file, one JSON
// string a line (multi-line prompts whole), skips a repeat of the last,
// and stores no prompt larger than historyMaxEntry.
func TestHistoryAcrossSessions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history")
	h := loadHistory(path)
	h.add("first")
	h.add("two\nlines")
	h.add("two\nlines")
	h.add(strings.Repeat("x", historyMaxEntry+1))
	if len(h.entries) != 3 {
		t.Errorf("in session: %d entries, want 3", len(h.entries))
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("history file: %v %v", fi, err)
	}
	again := loadHistory(path)
	if strings.Join(again.entries, "|") != "first|two\nlines" {
		t.Errorf("next session: %q", again.entries)
	}
}
