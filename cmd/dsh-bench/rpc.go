package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// agentProc is a spawned agent spoken to with raw JSON-RPC lines: the
// cheapest client possible, so the figures measure the agent.
type agentProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	nextID int
}

func spawn(bin string, env []string, args ...string) (*agentProc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &agentProc{cmd: cmd, stdin: in, out: bufio.NewReaderSize(out, 1<<20)}, nil
}

// message is one inbound JSON-RPC line.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// send writes a request and returns its id.
func (a *agentProc) send(method string, params any) (int, error) {
	a.nextID++
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": a.nextID, "method": method, "params": params})
	if err != nil {
		return 0, err
	}
	_, err = a.stdin.Write(append(b, '\n'))
	return a.nextID, err
}

// until reads messages until the reply to id, calling onNote with the raw
// line of each notification before it. Notifications are recognised without
// decoding them, so the client costs the measurement as little as possible.
func (a *agentProc) until(id int, onNote func(line []byte)) (message, error) {
	want := strconv.Itoa(id)
	for {
		line, err := a.readLine()
		if err != nil {
			return message{}, fmt.Errorf("reading agent: %w", err)
		}
		if bytes.Contains(line[:min(len(line), 48)], []byte(`"method":`)) {
			if bytes.Contains(line[:min(len(line), 120)], []byte(`"session/request_permission"`)) {
				return message{}, fmt.Errorf("the agent asked for permission (the benches run commands the auto mode allows)")
			}
			if onNote != nil {
				onNote(line)
			}
			continue
		}
		var m message
		if err := json.Unmarshal(line, &m); err != nil {
			return message{}, fmt.Errorf("agent wrote a bad line: %w", err)
		}
		if string(m.ID) == want {
			if len(m.Error) > 0 {
				return m, fmt.Errorf("%s", m.Error)
			}
			return m, nil
		}
	}
}

// readLine returns the next line, valid until the next read; it copies only
// lines longer than the reader's buffer, so the client stays cheap.
func (a *agentProc) readLine() ([]byte, error) {
	line, err := a.out.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return line, err
	}
	long := append([]byte(nil), line...)
	for err == bufio.ErrBufferFull {
		line, err = a.out.ReadSlice('\n')
		long = append(long, line...)
	}
	return long, err
}

// call sends a request and waits for its reply.
func (a *agentProc) call(method string, params any, onNote func(line []byte)) (message, error) {
	id, err := a.send(method, params)
	if err != nil {
		return message{}, err
	}
	return a.until(id, onNote)
}

// initialize performs the handshake with Zed's capabilities.
func (a *agentProc) initialize() error {
	_, err := a.call("initialize", map[string]any{
		"protocolVersion": 1,
		"clientCapabilities": map[string]any{
			"fs": map[string]any{"readTextFile": true, "writeTextFile": true}, "terminal": true,
			"_meta": map[string]any{"terminal_output": true},
		},
	}, nil)
	return err
}

// prompt sends a text prompt and waits for its reply.
func (a *agentProc) prompt(sid, text string, onNote func(line []byte)) (message, error) {
	return a.call("session/prompt", promptParams(sid, text), onNote)
}

func promptParams(sid, text string) map[string]any {
	return map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": text}}}
}

// waitFor reads until a line holding s.
func (a *agentProc) waitFor(s string) error {
	for {
		line, err := a.readLine()
		if err != nil {
			return err
		}
		if bytes.Contains(line, []byte(s)) {
			return nil
		}
	}
}

func (a *agentProc) newSession(cwd string) (string, error) {
	m, err := a.call("session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}, nil)
	if err != nil {
		return "", err
	}
	var r struct {
		SessionID string `json:"sessionId"`
	}
	err = json.Unmarshal(m.Result, &r)
	return r.SessionID, err
}

// close ends stdin and waits for the agent to exit.
func (a *agentProc) close() (time.Duration, error) {
	start := time.Now()
	a.stdin.Close()
	err := a.cmd.Wait()
	return time.Since(start), err
}

// peakRSS reads a live process's VmHWM in bytes.
func peakRSS(pid int) (int64, error) {
	return procStatus(fmt.Sprintf("/proc/%d/status", pid), "VmHWM:")
}

// rss reads a live process's VmRSS in bytes.
func rss(pid int) (int64, error) {
	return procStatus(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:")
}

// resetPeakRSS sets a process's VmHWM back to its current RSS (Linux 4.0+);
// false when the kernel refuses.
func resetPeakRSS(pid int) bool {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) == nil
}

// procStatus reads one kB field of a /proc status file, in bytes.
func procStatus(path, field string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in %s", field, path)
}
