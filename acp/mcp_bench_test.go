package acp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"testing"
	"time"

	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-acp/dsh-acp/acp"
	"github.com/dsh-acp/dsh-acp/executor/local"
	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/llm"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
	"github.com/dsh-acp/dsh-acp/internal/permission"
	"github.com/dsh-acp/dsh-acp/replay"
	"github.com/dsh-acp/dsh-acp/tools"
)

// BenchmarkMCPRoundTrip measures one MCP tool call through the daemon —
// from the client reading the call's tool_call update to it reading the
// final tool_call_update: the permission step (auto mode), the journal,
// the call over stdio, the result's text and card — against a direct
// client call (the Go SDK's) of the same tool on the same server binary,
// in the same run. A and B are paired per iteration; the median ratio is
// reported (target ≤ 1.3×).
func BenchmarkMCPRoundTrip(b *testing.B) {
	bin := acptest.BuildPackage(b, mcpServerPackage)
	state := b.TempDir()
	store, err := replay.OpenStore(state)
	if err != nil {
		b.Fatal(err)
	}
	ex, err := local.New(local.Config{StateDir: state})
	if err != nil {
		b.Fatal(err)
	}
	model := llmtest.New(b)
	cfg := acp.Config{Executor: ex, Tools: tools.NewBash(ex, tools.Config{}), Store: store,
		Model:       llm.New(llm.Config{BaseURL: model.URL(), APIKey: "k", Model: "m"}),
		DefaultMode: permission.ModeAuto}
	d := startInProcess(b, cfg)
	defer d.close()
	sid := d.newSession(b, b.TempDir(), []any{map[string]any{"name": "test", "command": bin, "args": []string{}, "env": []any{}}})

	direct := sdkmcp.NewClient(&sdkmcp.Implementation{Name: "bench"}, nil)
	cs, err := direct.Connect(context.Background(), &sdkmcp.CommandTransport{Command: exec.Command(bin)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	args := map[string]any{"text": "ping"}

	var ratios []float64
	var through, straight time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("call_%d", i)
		model.Push(llmtest.Calls(llmtest.Call{ID: id, Name: "mcp__test__echo", Args: `{"text":"ping"}`}), llmtest.Reply("ok"))
		a := d.roundTrip(b, sid, id)

		start := time.Now()
		res, err := cs.CallTool(context.Background(), &sdkmcp.CallToolParams{Name: "echo", Arguments: args})
		direct := time.Since(start)
		if err != nil || res.IsError {
			b.Fatalf("direct call: %v %+v", err, res)
		}
		through += a
		straight += direct
		ratios = append(ratios, float64(a)/float64(direct))
	}
	b.StopTimer()
	slices.Sort(ratios)
	median := ratios[len(ratios)/2]
	b.ReportMetric(median, "daemon/direct")
	b.ReportMetric(float64(through.Microseconds())/float64(b.N), "µs-daemon")
	b.ReportMetric(float64(straight.Microseconds())/float64(b.N), "µs-direct")
	b.Logf("MCP round trip through the daemon %v vs direct %v per call: median ratio %.2f× (target ≤ 1.3×)",
		through/time.Duration(b.N), straight/time.Duration(b.N), median)
}

// inProcess is acp.Serve over pipes, with every line it writes read and
// timestamped.
type inProcess struct {
	in    *io.PipeWriter
	lines chan timedLine
	done  chan error
	next  int
}

type timedLine struct {
	at   time.Time
	line []byte
}

func startInProcess(b *testing.B, cfg acp.Config) *inProcess {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	d := &inProcess{in: inW, lines: make(chan timedLine, 1024), done: make(chan error, 1)}
	go func() { d.done <- acp.Serve(context.Background(), inR, outW, cfg); outW.Close() }()
	go func() {
		r := bufio.NewReaderSize(outR, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				close(d.lines)
				return
			}
			d.lines <- timedLine{at: time.Now(), line: line}
		}
	}()
	d.request(b, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"_meta": map[string]any{"terminal_output": true}}})
	return d
}

// send writes one request and returns its id.
func (d *inProcess) send(b *testing.B, method string, params any) int {
	d.next++
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": d.next, "method": method, "params": params})
	if _, err := d.in.Write(append(msg, '\n')); err != nil {
		b.Fatal(err)
	}
	return d.next
}

// wire is the part of a line the benchmark reads.
type wire struct {
	ID     *int            `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
	Params struct {
		Update struct {
			Kind       string `json:"sessionUpdate"`
			ToolCallID string `json:"toolCallId"`
			Status     string `json:"status"`
		} `json:"update"`
	} `json:"params"`
}

// request sends a request and waits for its reply, returning its result.
func (d *inProcess) request(b *testing.B, method string, params any) json.RawMessage {
	id := d.send(b, method, params)
	for l := range d.lines {
		var w wire
		if json.Unmarshal(l.line, &w) == nil && w.ID != nil && *w.ID == id && w.Method == "" {
			if w.Error != nil {
				b.Fatalf("%s: %s", method, w.Error)
			}
			return w.Result
		}
	}
	b.Fatalf("%s: no reply", method)
	return nil
}

func (d *inProcess) newSession(b *testing.B, cwd string, servers []any) string {
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(d.request(b, "session/new", map[string]any{"cwd": cwd, "mcpServers": servers}), &r); err != nil {
		b.Fatal(err)
	}
	return r.SessionID
}

// roundTrip runs one prompt whose model calls tool call id and returns the
// time from the call's card opening to its final update.
func (d *inProcess) roundTrip(b *testing.B, sid, id string) time.Duration {
	req := d.send(b, "session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "go"}}})
	var opened, closed time.Time
	for l := range d.lines {
		var w wire
		if json.Unmarshal(l.line, &w) != nil {
			continue
		}
		u := w.Params.Update
		switch {
		case w.Method == "session/update" && u.Kind == "tool_call" && u.ToolCallID == id:
			opened = l.at
		case w.Method == "session/update" && u.ToolCallID == id && (u.Status == "completed" || u.Status == "failed"):
			if u.Status != "completed" {
				b.Fatalf("call %s failed: %s", id, l.line)
			}
			closed = l.at
		case w.ID != nil && *w.ID == req && w.Method == "":
			if opened.IsZero() || closed.IsZero() {
				b.Fatalf("the turn ended without a finished card for %s", id)
			}
			return closed.Sub(opened)
		}
	}
	b.Fatal("the daemon stopped")
	return 0
}

func (d *inProcess) close() {
	d.in.Close()
	for range d.lines {
	}
	<-d.done
}
