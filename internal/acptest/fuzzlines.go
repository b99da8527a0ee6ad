package acptest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"unicode/utf8"
)

// The lines the reply fuzzer starts from: requests (ids are rewritten per
// line), a notification and a response.
var replySeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
	`{"jsonrpc":"2.0","id":"n-1","method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`,
	`{"jsonrpc":"2.0","id":2,"method":"session/list","params":{}}`,
	`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"héllo"}]}}`,
	`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`,
	`{"jsonrpc":"2.0","id":4,"result":{"outcome":{"outcome":"cancelled"}}}`,
}

// MutatedLines derives a client's input from program: valid lines, each
// mutated byte by byte or not (an invalid UTF-8 byte in a key or a value,
// a cut, a byte flipped), duplicated with the same id, and floods of
// notifications in between.
func MutatedLines(program []byte) []string {
	r := rand.New(rand.NewPCG(uint64(len(program)), 7))
	for _, b := range program {
		r = rand.New(rand.NewPCG(r.Uint64()^uint64(b), uint64(b)))
	}
	var out []string
	for i := range 40 + r.IntN(40) {
		line := replySeeds[r.IntN(len(replySeeds))]
		line = strings.Replace(line, `"id":1,`, fmt.Sprintf(`"id":%d,`, 100+i), 1)
		line = strings.Replace(line, `"id":"n-1"`, fmt.Sprintf(`"id":"n-%d"`, i), 1)
		line = strings.Replace(line, `"id":2,`, fmt.Sprintf(`"id":%d,`, 1000+i), 1)
		line = strings.Replace(line, `"id":3,`, fmt.Sprintf(`"id":%d.5,`, i), 1)
		switch r.IntN(8) {
		case 0: // an invalid byte in a key ("method", "id", "params")
			key := []string{`"method"`, `"id"`, `"params"`, `"jsonrpc"`}[r.IntN(4)]
			if k := strings.Index(line, key); k >= 0 {
				p := k + 1 + r.IntN(len(key)-2)
				line = line[:p] + string([]byte{0xff, 0xc0, 0x80}[r.IntN(3)]) + line[p:]
			}
		case 1: // an invalid byte anywhere
			p := r.IntN(len(line))
			line = line[:p] + "\xff" + line[p+1:]
		case 2: // cut
			line = line[:r.IntN(len(line))]
		case 3: // a byte changed
			p := r.IntN(len(line))
			line = line[:p] + string(rune(' '+r.IntN(90))) + line[p+1:]
		}
		out = append(out, line)
		if r.IntN(6) == 0 { // the same line again: a reused id
			out = append(out, line)
		}
		if r.IntN(10) == 0 { // a flood
			for range 50 + r.IntN(200) {
				out = append(out, `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`)
			}
		}
	}
	return out
}

// StrictKind is an independent judgement of a line: a request (and its
// id), a notification, a response, or none of them (anything else, which
// the connection may refuse). id is IDKey of the request's id.
func StrictKind(line string) (kind, id string) {
	if !utf8.ValidString(line) {
		return "other", ""
	}
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(line), &m) != nil || string(m["jsonrpc"]) != `"2.0"` {
		return "other", ""
	}
	for k := range m {
		if k != "jsonrpc" && k != "id" && k != "method" && k != "params" && k != "result" {
			return "other", ""
		}
	}
	var method string
	if m["method"] == nil {
		if m["result"] != nil && m["id"] != nil {
			return "response", ""
		}
		return "other", ""
	}
	if json.Unmarshal(m["method"], &method) != nil || method == "" || m["result"] != nil {
		return "other", ""
	}
	if p := m["params"]; p != nil && p[0] != '{' && p[0] != '[' {
		return "other", ""
	}
	switch id := m["id"]; {
	case id == nil:
		return "notification", ""
	case id[0] == '"' || id[0] == '-' || id[0] >= '0' && id[0] <= '9':
		return "request", IDKey(id)
	}
	return "other", ""
}

// IDKey is the identity of a JSON-RPC id, whatever its encoding: a string
// by its decoded text, a number by its digits.
func IDKey(id json.RawMessage) string {
	if len(id) > 0 && id[0] == '"' {
		var s string
		if json.Unmarshal(id, &s) == nil {
			return "s" + s
		}
	}
	return "n" + string(id)
}
