package ingress

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestVerdicts(t *testing.T) {
	const (
		req    = `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"a":1},"extra":true}`
		notif  = `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`
		resp   = `{"jsonrpc":"2.0","id":3,"result":{}}`
		params = `{"a":1,"_meta":{"k":"v"}}`
	)
	tests := []struct {
		name      string
		line      string
		verdict   Verdict
		forwarded string
		replies   string
	}{
		{"zero verdict", req, Verdict{}, req, ""},
		{"drop a notification", notif, Verdict{Drop: true}, "", ""},
		{"a request is never dropped", req, Verdict{Drop: true}, req, ""},
		{"a response is never dropped", resp, Verdict{Drop: true}, resp, ""},
		{"new params for a request", req, Verdict{Params: json.RawMessage(params)},
			`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":` + params + `}`, ""},
		{"new params for a notification", notif, Verdict{Params: json.RawMessage(`[1]`)},
			`{"jsonrpc":"2.0","method":"session/cancel","params":[1]}`, ""},
		{"a response's params are never replaced", resp, Verdict{Params: json.RawMessage(params)}, resp, ""},
		{"params that are not an object or array", req, Verdict{Params: json.RawMessage(`"x"`)}, req, ""},
		{"params that are not JSON", req, Verdict{Params: json.RawMessage(`{"a":`)}, req, ""},
		{"a rebuilt line over the cap", req, Verdict{Params: json.RawMessage(`{"p":"` + strings.Repeat("x", 200) + `"}`)}, "",
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid request","data":{"error":"line too long","limit":128}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const next = `{"jsonrpc":"2.0","id":99,"method":"next"}`
			opts := Options{MaxLine: 128, Observe: func(m Message) Verdict {
				if m.Method == "next" {
					return Verdict{}
				}
				return tt.verdict
			}}
			res := runGuard(t, strings.NewReader(tt.line+"\n"+next+"\n"), opts)
			want := next + "\n"
			if tt.forwarded != "" {
				want = tt.forwarded + "\n" + want
			}
			if res.forwarded != want {
				t.Errorf("forwarded\n %q\nwant\n %q", res.forwarded, want)
			}
			wantReplies := ""
			if tt.replies != "" {
				wantReplies = tt.replies + "\n"
			}
			if res.replies != wantReplies {
				t.Errorf("replies %q, want %q", res.replies, wantReplies)
			}
		})
	}
}
