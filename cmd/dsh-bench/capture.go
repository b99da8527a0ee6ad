package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// captureRows: a command printing -capture-bytes, run through the daemon
// as a `!` command and as a model's bash call, against reading its pipe
// directly: throughput, and the daemon's RSS growth while it runs.
func captureRows(h *harness) ([]row, error) {
	model, err := startFakeModel()
	if err != nil {
		return nil, err
	}
	defer model.close()
	n := h.opt.captureBytes
	sources := []struct{ name, command string }{
		{"/dev/zero", fmt.Sprintf("head -c %d /dev/zero", n)},
		{"printable", fmt.Sprintf("yes 'printable output: the quick brown fox jumps over the lazy dog 0123456789' | head -c %d", n)},
	}
	var rows []row
	for _, src := range sources {
		for _, viaModel := range []bool{false, true} {
			route := "!"
			if viaModel {
				route = "model bash"
			}
			var growth samples
			daemon := func() (float64, error) {
				d, g, err := daemonCapture(h, model, src.command, viaModel)
				growth = append(growth, float64(g)/(1<<20))
				return float64(n) / 1e6 / d.Seconds(), err
			}
			pipe := func() (float64, error) {
				d, err := pipeRead(src.command)
				return float64(n) / 1e6 / d.Seconds(), err
			}
			p, err := pair(h.runs(5), daemon, pipe)
			if err != nil {
				return nil, err
			}
			name := fmt.Sprintf("capture %s of %s via %s", size(n), src.name, route)
			rows = append(rows,
				ratioRow(name+": throughput", "MB/s", p, 0.8, true),
				boundRow(name+": RSS growth", "MiB", growth, 16))
		}
	}
	return rows, nil
}

// daemonCapture runs command in a fresh daemon, after one warm-up call
// of the same kind, and returns the time from prompt to reply and the peak RSS growth
// during it.
func daemonCapture(h *harness, model *fakeModel, command string, viaModel bool) (time.Duration, int64, error) {
	var extra []string
	if viaModel {
		extra = model.env()
	}
	a, err := h.spawn(extra...)
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(filepath.Join(h.work, "state", "spill"))
	defer a.close()
	if err := a.initialize(); err != nil {
		return 0, 0, err
	}
	sid, err := a.newSession(h.work)
	if err != nil {
		return 0, 0, err
	}
	// A warm-up call of the same kind: what the first call sets up once
	// (the model's HTTP client, say) is not growth under output.
	warm := "!true"
	if viaModel {
		model.setCommand("true")
		warm = "run the command"
	}
	if _, err := a.prompt(sid, warm, nil); err != nil {
		return 0, 0, err
	}
	pid := a.cmd.Process.Pid
	before, err := rss(pid)
	if err != nil {
		return 0, 0, err
	}
	if !resetPeakRSS(pid) {
		if before, err = peakRSS(pid); err != nil { // growth past the earlier peak only
			return 0, 0, err
		}
	}
	text := "!" + command
	if viaModel {
		model.setCommand(command)
		text = "run the command"
	}
	start := time.Now()
	finals := 0
	_, err = a.prompt(sid, text, func(line []byte) {
		if bytes.Contains(line, []byte(`"terminal_exit"`)) {
			finals++
		}
	})
	took := time.Since(start)
	if err != nil {
		return 0, 0, err
	}
	if finals != 1 {
		return 0, 0, fmt.Errorf("%s: %d final cards, want 1", text, finals)
	}
	peak, err := peakRSS(pid)
	if err != nil {
		return 0, 0, err
	}
	return took, max(0, peak-before), nil
}

// pipeRead is the baseline: the command's stdout read from a pipe and
// discarded.
func pipeRead(command string) (time.Duration, error) {
	cmd := exec.Command("bash", "-c", command)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	if _, err := io.Copy(io.Discard, out); err != nil {
		return 0, err
	}
	if err := cmd.Wait(); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

func size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d B", n)
}

// fakeModel is a chat API that answers a request ending with a user's
// message with one bash call of the command set, and a request ending with
// the call's result with a short text: the smallest model turn that runs a
// command.
type fakeModel struct {
	ln  net.Listener
	srv *http.Server

	mu      sync.Mutex
	command string
}

func startFakeModel() (*fakeModel, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	m := &fakeModel{ln: ln}
	m.srv = &http.Server{Handler: http.HandlerFunc(m.serve), ReadHeaderTimeout: 10 * time.Second}
	go m.srv.Serve(ln)
	return m, nil
}

func (m *fakeModel) close() { m.srv.Close() }

// env points a daemon at the fake, in the auto mode (no permission
// questions).
func (m *fakeModel) env() []string {
	return []string{"DSH_BASE_URL=http://" + m.ln.Addr().String(), "DSH_API_KEY=bench", "DSH_MODEL=bench", "DSH_MODE=auto"}
}

func (m *fakeModel) setCommand(c string) {
	m.mu.Lock()
	m.command = c
	m.mu.Unlock()
}

func (m *fakeModel) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil || r.Method != http.MethodPost {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var req struct {
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil || len(req.Messages) == 0 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	if req.Messages[len(req.Messages)-1].Role == "tool" { // the call's result is in: answer
		sse(w, map[string]any{"role": "assistant", "content": "done"}, "")
		sse(w, map[string]any{}, "stop")
	} else {
		m.mu.Lock()
		args, _ := json.Marshal(map[string]string{"command": m.command})
		m.mu.Unlock()
		call := map[string]any{"index": 0, "id": "call_bench", "type": "function",
			"function": map[string]any{"name": "bash", "arguments": string(args)}}
		sse(w, map[string]any{"role": "assistant", "tool_calls": []any{call}}, "")
		sse(w, map[string]any{}, "tool_calls")
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// sse writes one streamed chat completion chunk.
func sse(w io.Writer, delta map[string]any, finish string) {
	choice := map[string]any{"index": 0, "delta": delta, "finish_reason": nil}
	if finish != "" {
		choice["finish_reason"] = finish
	}
	b, _ := json.Marshal(map[string]any{"id": "chatcmpl-bench", "object": "chat.completion.chunk",
		"created": 0, "model": "bench", "choices": []any{choice}})
	fmt.Fprintf(w, "data: %s\n\n", b)
}
