package acp

import (
	"bytes"
	"encoding/json"
	"testing"
)

// A reply hook runs once, after the line answering its request was written,
// with the reply's result (nil for an error reply); other lines pass
// untouched.
func TestReplyHooks(t *testing.T) {
	tests := []struct {
		name   string
		id     string // as the request had it
		lines  []string
		called string // the result the hook got; "" for no call
	}{
		{"number id", `7`, []string{`{"jsonrpc":"2.0","id":7,"result":{"sessionId":"s1"}}`}, `{"sessionId":"s1"}`},
		{"string id, spaced", ` "a-1" `, []string{`{"jsonrpc":"2.0","id":"a-1","result":{}}`}, `{}`},
		{"error reply runs nothing", `3`, []string{`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"x"}}`}, ""},
		{"other ids and the SDK's own requests pass", `4`, []string{
			`{"jsonrpc":"2.0","id":5,"result":{}}`,
			`{"jsonrpc":"2.0","id":4,"method":"session/request_permission","params":{}}`,
			`{"jsonrpc":"2.0","method":"session/update","params":{}}`,
		}, ""},
		{"once", `9`, []string{`{"jsonrpc":"2.0","id":9,"result":1}`, `{"jsonrpc":"2.0","id":9,"result":2}`}, `1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			calls := newPendingCalls()
			var got []string
			calls.add(json.RawMessage(tt.id), func(res json.RawMessage) {
				if res == nil {
					return // an error reply
				}
				got = append(got, string(res))
				if !bytes.Contains(out.Bytes(), res) {
					t.Error("the hook ran before its reply was written")
				}
			})
			w := &replyWatcher{w: &out, calls: calls}
			for _, l := range tt.lines {
				if _, err := w.Write([]byte(l + "\n")); err != nil {
					t.Fatal(err)
				}
			}
			switch {
			case tt.called == "" && len(got) != 0:
				t.Errorf("hook ran with %q", got)
			case tt.called != "" && (len(got) != 1 || got[0] != tt.called):
				t.Errorf("hook got %q, want %q once", got, tt.called)
			}
			if out.Len() == 0 {
				t.Error("nothing was written")
			}
		})
	}
}
