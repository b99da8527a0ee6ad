package agent

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/llm"
)

// benchHistory is a history of about 100k tokens (four characters each):
// 160 turns of a prompt, a tool call and a 40-line output, and an answer.
func benchHistory() history {
	h := newHistory(&ledger{})
	var out strings.Builder
	for i := range 40 {
		fmt.Fprintf(&out, "src/pkg%02d/file_%02d.go:%d: some compiler or test output\n", i, i, i*7)
	}
	out.WriteString("[exit code: 1]")
	for i := range 160 {
		id := fmt.Sprintf("call_%d", i)
		h.apply(event.UserPrompt{Text: fmt.Sprintf("turn %d: build the project and fix what fails in package %d", i, i)})
		h.apply(event.AssistantMessage{ToolCalls: []event.CallInfo{{ID: id, Name: "bash", Args: []byte(`{"command":"go build ./... && go test ./pkg/...","description":"build"}`)}}})
		h.apply(event.ToolResult{ID: id, Name: "bash", Result: event.Result{Text: out.String()}})
		h.apply(event.AssistantMessage{Text: "It fails in two places; the next step is to fix them."})
		h.apply(event.TurnEnd{StopReason: event.EndTurn})
	}
	return h
}

func historyTokens(h *history) int {
	n := 0
	for _, e := range h.entries {
		n += msgSize(e.msg)
	}
	return n / 4
}

// plainCopy copies every message of the history, content included: the
// baseline the elision pass is measured against.
func plainCopy(h *history) []llm.Message {
	out := make([]llm.Message, len(h.entries))
	for i, e := range h.entries {
		m := e.msg
		m.Content = strings.Clone(m.Content)
		m.ToolCalls = append([]llm.ToolCall(nil), m.ToolCalls...)
		out[i] = m
	}
	return out
}

// BenchmarkCompactElision100k is the elision pass of a compaction over a
// 100k-token history: planning (every old output elided but the newest)
// and applying the Compaction event, as a live session does.
func BenchmarkCompactElision100k(b *testing.B) {
	base := benchHistory()
	job := compactJob{est: estimator{tokens: 1, size: 4}, fixed: 4000}
	for b.Loop() {
		h := base
		h.entries = append([]entry(nil), base.entries...) // elision replaces contents, never edits them
		v := h.planElision(job)
		h.compact(event.Compaction{ElideBefore: v.elideBefore})
		if v.elided == 0 {
			b.Fatal("nothing elided")
		}
	}
	b.ReportMetric(float64(historyTokens(&base)), "tokens")
}

// BenchmarkHistoryCopy100k is the baseline: a plain copy of the same
// history.
func BenchmarkHistoryCopy100k(b *testing.B) {
	base := benchHistory()
	for b.Loop() {
		if len(plainCopy(&base)) == 0 {
			b.Fatal("empty")
		}
	}
}
