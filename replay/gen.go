package replay

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// GenerateJournal writes a synthetic journal to w: a session header, one
// user prompt, then calls rounds of an assistant message (a little
// reasoning, one bash tool call), its ToolCall and its ToolResult with a
// few hundred bytes of output, and a final TurnEnd. Its content is
// deterministic. It is the benchmark load (see BenchmarkLoad10k) and what
// a replay timing measures against.
func GenerateJournal(w io.Writer, calls int, sessionID, cwd string) error {
	if err := ValidID(sessionID); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	g := generator{w: bw, enc: newEncoder(), t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	g.put(&wireRecord{Type: typeSession, ID: sessionID, Cwd: cwd, Created: g.t, DaemonVersion: "generated"})
	g.event(event.UserPrompt{Text: fmt.Sprintf("run %d commands and tell me how it went", calls)})
	for i := range calls {
		id := fmt.Sprintf("call_%06d", i)
		args := json.RawMessage(fmt.Sprintf(`{"command":"ls -la /tmp/dir%d","description":"List directory %d"}`, i, i))
		g.event(event.AssistantMessage{
			Reasoning: fmt.Sprintf("Step %d: look at the next directory.", i),
			ToolCalls: []event.CallInfo{{ID: id, Name: "bash", Args: args}},
		})
		g.event(event.ToolCall{ID: id, Name: "bash", Args: args})
		out := generatedOutput(i)
		code := 0
		g.event(event.ToolResult{ID: id, Name: "bash", Args: args, Result: event.Result{
			Text: out, CardOutput: out, Payload: json.RawMessage(fmt.Sprintf(`{"exitCode":%d}`, code)),
		}})
	}
	g.event(event.AssistantMessage{Text: fmt.Sprintf("All %d commands ran.", calls)})
	g.event(event.TurnEnd{StopReason: event.EndTurn})
	if g.err != nil {
		return fmt.Errorf("generate journal: %w", g.err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("generate journal: %w", err)
	}
	return nil
}

func generatedOutput(i int) string {
	var b strings.Builder
	b.WriteString("total 24\n")
	for j := range 5 {
		fmt.Fprintf(&b, "-rw-r--r--  1 user user %5d Jan  2 03:04 file-%d-%d.txt\n", 100*j+i%97, i, j)
	}
	return b.String()
}

type generator struct {
	w   *bufio.Writer
	enc *encoder
	seq uint64
	t   time.Time
	err error
}

func (g *generator) event(ev event.Event) {
	var r wireRecord
	if _, err := fromEvent(ev, &r); err != nil && g.err == nil {
		g.err = err
	}
	g.put(&r)
}

func (g *generator) put(r *wireRecord) {
	if g.err != nil {
		return
	}
	g.seq++
	g.t = g.t.Add(time.Millisecond)
	r.V, r.Seq, r.T = Version, g.seq, g.t
	line, err := g.enc.line(r)
	if err == nil {
		_, err = g.w.Write(line)
	}
	g.err = err
}
