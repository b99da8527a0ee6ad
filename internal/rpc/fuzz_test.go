package rpc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// Whatever a client sends, the connection never panics, every message it
// takes is one, every reply it writes is one
// JSON-RPC error object, and a valid request after the garbage still gets
// through.
func FuzzConn(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
		`{not json`, `[]`, `[{"jsonrpc":"2.0","id":1,"method":"x"}]`, `{"jsonrpc":"2.0","id":{},"method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"1.0","method":"x"}`, "\x00\xff\r", `"just a string"`,
		`{"jsonrpc":"2.0","id":1,"method":"x"}{"jsonrpc":"2.0","id":2,"method":"y"}`,
		strings.Repeat(`{"a":`, 200),
	} {
		f.Add([]byte(seed))
	}
	const sentinel = `{"jsonrpc":"2.0","id":"sentinel","method":"session/new","params":{}}`
	f.Fuzz(func(t *testing.T, garbage []byte) {
		input := string(garbage) + "\n" + sentinel + "\n"
		res := runGuard(t, strings.NewReader(input), Options{MaxLine: 1 << 12})
		for _, r := range res.observed {
			if r.Method == "" || r.ID != nil && !json.Valid(r.ID) || r.Params != nil && !json.Valid(r.Params) {
				t.Fatalf("took a message that is not one: %+v", r)
			}
		}
		for _, line := range nonEmptyLines(res.replies) {
			var reply struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(line), &reply); err != nil || reply.JSONRPC != "2.0" || reply.Error == nil || reply.Error.Message == "" {
				t.Fatalf("bad error reply %q (%v)", line, err)
			}
		}
		if !strings.HasSuffix(res.forwarded, canon(sentinel)) {
			t.Fatalf("the valid request after the garbage was not forwarded last; forwarded %q", res.forwarded)
		}
	})
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range bytes.Split([]byte(s), []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			out = append(out, string(l))
		}
	}
	return out
}
