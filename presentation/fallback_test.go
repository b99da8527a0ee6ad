package presentation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/executorfake"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/presentation"
	"github.com/dsh-acp/dsh-acp/tools"
)

// fallbackRecorder collects a fallback presenter's updates.
type fallbackRecorder struct {
	mu  sync.Mutex
	ups []acp.SessionUpdate
}

func (r *fallbackRecorder) send(u acp.SessionUpdate) {
	r.mu.Lock()
	r.ups = append(r.ups, u)
	r.mu.Unlock()
}

// texts returns the console block of every update after the opening one
// ("" for an update without one).
func (r *fallbackRecorder) texts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, u := range r.ups {
		if u.ToolCallUpdate == nil {
			continue
		}
		text := ""
		for _, c := range u.ToolCallUpdate.Content {
			if c.Content != nil && c.Content.Content.Text != nil && strings.HasPrefix(c.Content.Content.Text.Text, "```") {
				text = c.Content.Content.Text.Text
			}
		}
		out = append(out, text)
	}
	return out
}

func fallbackPresenter(r *fallbackRecorder, interval time.Duration) *presentation.Presenter {
	return presentation.NewPresenter(presentation.PresenterOptions{
		Send:  r.send,
		Cards: tools.NewBuiltin(executorfake.New(), tools.Config{}),
		Cwd:   sessionCwd,
		Flush: presentation.FlushPolicy{Fallback: interval},
	})
}

const fallbackArgs = `{"command":"make","description":"Build"}`

// runFallback plays a foreground bash call over a fake executor giving
// chunks and exit, through a fallback presenter, and returns the updates'
// console blocks.
func runFallback(t *testing.T, interval time.Duration, chunks []executor.Chunk, res executor.Result) []string {
	t.Helper()
	r := &fallbackRecorder{}
	p := fallbackPresenter(r, interval)
	f := executorfake.New()
	f.Chunks, f.Result = chunks, res
	bash, _ := tools.NewBash(f, tools.Config{}).Lookup("bash")
	p.Emit(event.ToolCall{ID: callID, Name: "bash", Args: json.RawMessage(fallbackArgs)})
	result := bash.Run(context.Background(), tools.Call{ID: callID, Args: json.RawMessage(fallbackArgs),
		Session: tools.Session{ID: sessionID, Cwd: sessionCwd},
		Output:  func(s string) { p.Emit(event.ToolOutput{ID: callID, Data: s}) }})
	p.Emit(event.ToolResult{ID: callID, Name: "bash", Args: json.RawMessage(fallbackArgs), Result: roundTrip(t, result)})
	return r.texts()
}

// The first output goes out at once; what follows within the interval
// waits; the final update shows the tail and how the command ended, and
// replaces what was pending (no update outside the interval at the end).
func TestFallbackStreamsThenEnds(t *testing.T) {
	chunks := []executor.Chunk{stdout("before\n")}
	for i := range 30 {
		chunks = append(chunks, stdout(fmt.Sprintf("line %d\n", i)))
	}
	code := 3
	got := runFallback(t, time.Hour, chunks, executor.Result{ExitCode: code})
	if len(got) != 2 {
		t.Fatalf("%d updates after the opening, want 2 (the first output, the end): %q", len(got), got)
	}
	if got[0] != "```console\nbefore\n```" {
		t.Errorf("first live update %q", got[0])
	}
	if !strings.HasPrefix(got[1], "```console\nbefore\nline 0\n") || !strings.HasSuffix(got[1], "line 29\ndsh-acp: exit 3\n```") {
		t.Errorf("final update %q", got[1])
	}
}

// A live update carries about a screen: the last lines, with a note of
// what is above.
func TestFallbackLiveUpdateIsBounded(t *testing.T) {
	var chunks []executor.Chunk
	for i := range 500 {
		chunks = append(chunks, stdout(fmt.Sprintf("%05d\n", i)))
	}
	got := runFallback(t, time.Nanosecond, chunks, executor.Result{})
	if len(got) < 3 {
		t.Fatalf("only %d updates with a nanosecond interval", len(got))
	}
	for i, text := range got[:len(got)-1] {
		if len(text) > presentation.FallbackLiveBytes+200 || strings.Count(text, "\n") > presentation.FallbackLiveLines+3 {
			t.Errorf("live update %d: %d bytes, %d lines", i, len(text), strings.Count(text, "\n"))
		}
	}
	last := got[len(got)-2]
	if !strings.Contains(last, " bytes above not shown]\n") {
		t.Errorf("a cut live update has no note: %q", last)
	}
}

// At most one live update per interval, however fast output arrives.
func TestFallbackRate(t *testing.T) {
	const interval = 50 * time.Millisecond
	r := &fallbackRecorder{}
	p := fallbackPresenter(r, interval)
	p.Emit(event.ToolCall{ID: callID, Name: "bash", Args: json.RawMessage(fallbackArgs)})
	start := time.Now()
	for time.Since(start) < 400*time.Millisecond {
		p.Emit(event.ToolOutput{ID: callID, Data: "tick\n"})
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	n := len(r.texts())
	if max := int(elapsed/interval) + 2; n > max || n < 2 {
		t.Errorf("%d live updates in %v at one per %v (want 2..%d)", n, elapsed, interval, max)
	}
	p.Emit(event.ToolResult{ID: callID, Name: "bash", Args: json.RawMessage(fallbackArgs),
		Result: tools.WithOutcome(event.Result{Text: "tick", CardOutput: "tick\n"}, tools.Outcome{ExitCode: new(int)})})
}

// An output far past the card's cap ends with its tail (what the model
// sees), bounded, after a note of what was cut — not with the head.
func TestFallbackKeepsTheTail(t *testing.T) {
	var all strings.Builder
	for i := 1; i <= 400000; i++ {
		fmt.Fprintf(&all, "%d\n", i)
	}
	tail := all.String()[all.Len()-1<<20:] // the executor keeps the last MiB
	got := runFallback(t, time.Hour, []executor.Chunk{stdout(all.String())}, executor.Result{Combined: []byte(tail)})
	final := got[len(got)-1]
	if !strings.HasSuffix(final, "\n399999\n400000\ndsh-acp: exit 0\n```") || len(final) > presentation.FallbackFinalBytes+200 {
		t.Fatalf("final update of %d bytes ends %q", len(final), final[max(0, len(final)-80):])
	}
	if !strings.HasPrefix(final, "```console\n[… ") || !strings.Contains(final, " bytes above not shown]\n") {
		t.Errorf("final update starts %q", final[:80])
	}
}

// How a call ended, one line, the same live and replayed: the exit pill's
// words for a run, the terminal card's reason line for one that did not run
// normally (not the model's instructions).
func TestFallbackEndLines(t *testing.T) {
	zero, three := 0, 3
	tests := []struct {
		name string
		res  event.Result
		want string
	}{
		{"exit 0", tools.WithOutcome(event.Result{Text: "ok", CardOutput: "ok\n"}, tools.Outcome{ExitCode: &zero}), "ok\ndsh-acp: exit 0"},
		{"exit 3", tools.WithOutcome(event.Result{Text: "[exit code: 3]"}, tools.Outcome{ExitCode: &three}), "dsh-acp: exit 3"},
		{"signal", tools.WithOutcome(event.Result{Text: "x\n[killed by signal: SIGKILL]", CardOutput: "x"}, tools.Outcome{Signal: "SIGKILL"}), "x\ndsh-acp: killed by SIGKILL"},
		{"timeout", tools.WithOutcome(event.Result{Text: "[timed out after 120000ms]"}, tools.Outcome{Signal: "SIGTERM", TimedOut: true, TimeoutMs: 120000}), "dsh-acp: timed out after 2m"},
		{"declined", event.Result{Text: "The user declined to run this command. Do not retry it; ask the user how to proceed.", IsError: true, Declined: "declined by the user"}, "dsh-acp: declined by the user"},
		{"denied", event.Result{Text: "Not run: denied in read-only mode. Do not retry it.", IsError: true, Declined: "denied in read-only mode"}, "dsh-acp: denied in read-only mode"},
	}
	set := tools.NewBuiltin(executorfake.New(), tools.Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := set.PresentCall("bash", json.RawMessage(fallbackArgs))
			out := set.PresentResult("bash", json.RawMessage(fallbackArgs), tt.res)
			ups := presentation.Replay(callID, in, out, sessionCwd, presentation.Caps{})
			content := ups[len(ups)-1].ToolCallUpdate.Content
			last := content[len(content)-1].Content.Content.Text.Text
			if want := "```console\n" + tt.want + "\n```"; last != want {
				t.Errorf("card ends %q, want %q", last, want)
			}
			if strings.Contains(last, "Do not retry") {
				t.Error("the card shows the model's instructions")
			}
		})
	}
}
