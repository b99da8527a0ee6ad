package acptest

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"time"
)

// The test binary doubles as a fake agent: TestMain runs runFakeAgent instead
// of the tests when fakeAgentEnv is set, so Start can spawn os.Args[0] and
// talk to a real process over real pipes. This is the pattern for any test
// that needs a scripted peer.
const (
	fakeAgentEnv = "ACPTEST_FAKE_AGENT" // "1": serve; "hang": serve, then ignore stdin EOF
)

// fakeMessage is any JSON-RPC message the fake agent reads.
type fakeMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

type fakeAgent struct {
	in  *bufio.Reader
	out *json.Encoder // one Write per message
}

// runFakeAgent serves a scripted ACP agent on stdin/stdout until EOF:
//   - initialize echoes clientCapabilities under "echo";
//   - session/new returns session "s1";
//   - session/prompt sends chunks "one" and "two", asks permission (request
//     id 100), sends chunk "waiting", waits for the answer, sends the outcome
//     as a chunk, and ends the turn;
//   - "garbage" writes a non-JSON line to stdout, then replies {};
//   - a line that is not JSON gets -32700 with id null; other requests -32601.
func runFakeAgent(mode string) {
	a := &fakeAgent{in: bufio.NewReader(os.Stdin), out: json.NewEncoder(os.Stdout)}
	for {
		m, ok, eof := a.read()
		if eof {
			break
		}
		if ok {
			a.serve(m)
		}
	}
	if mode == "hang" {
		time.Sleep(time.Hour)
	}
}

// read returns the next message; ok is false for a line answered with a
// parse error.
func (a *fakeAgent) read() (m fakeMessage, ok, eof bool) {
	line, err := a.in.ReadBytes('\n')
	if err == io.EOF && len(line) == 0 {
		return m, false, true
	}
	if json.Unmarshal(line, &m) != nil {
		a.send(map[string]any{"jsonrpc": "2.0", "id": nil,
			"error": map[string]any{"code": -32700, "message": "Parse error"}})
		return m, false, false
	}
	return m, true, false
}

func (a *fakeAgent) send(v any) { _ = a.out.Encode(v) }

func (a *fakeAgent) reply(id json.RawMessage, result any) {
	a.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (a *fakeAgent) chunk(text string) {
	a.send(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{
		"sessionId": "s1",
		"update": map[string]any{"sessionUpdate": "agent_message_chunk",
			"content": map[string]any{"type": "text", "text": text}},
	}})
}

func (a *fakeAgent) serve(m fakeMessage) {
	switch m.Method {
	case "initialize":
		var p struct {
			Caps json.RawMessage `json:"clientCapabilities"`
		}
		_ = json.Unmarshal(m.Params, &p)
		a.reply(m.ID, map[string]any{"protocolVersion": 1, "echo": p.Caps})
	case "session/new":
		a.reply(m.ID, map[string]any{"sessionId": "s1"})
	case "session/prompt":
		a.prompt(m.ID)
	case "garbage":
		_, _ = os.Stdout.WriteString("debug: not a protocol line\n")
		a.reply(m.ID, map[string]any{})
	default:
		if m.ID != nil {
			a.send(map[string]any{"jsonrpc": "2.0", "id": m.ID,
				"error": map[string]any{"code": -32601, "message": "Method not found"}})
		}
	}
}

func (a *fakeAgent) prompt(id json.RawMessage) {
	a.chunk("one")
	a.chunk("two")
	a.send(map[string]any{"jsonrpc": "2.0", "id": 100, "method": "session/request_permission", "params": map[string]any{
		"sessionId": "s1",
		"toolCall":  map[string]any{"toolCallId": "call_1", "title": "rm -rf build", "kind": "execute"},
		"options": []map[string]any{
			{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
			{"optionId": "reject", "name": "Reject", "kind": "reject_once"},
		},
	}})
	a.chunk("waiting")
	for {
		m, ok, eof := a.read()
		if eof {
			return
		}
		if ok && string(m.ID) == "100" && m.Method == "" {
			outcome := string(m.Result)
			if m.Error != nil {
				outcome = "error " + string(m.Error)
			}
			a.chunk("outcome " + outcome)
			break
		}
	}
	a.reply(id, map[string]any{"stopReason": "end_turn"})
}
