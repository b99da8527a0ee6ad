package llm

import (
	"fmt"
	"testing"
)

func TestParseContextLimit(t *testing.T) {
	tests := []struct {
		name, msg         string
		code, typ         string
		window, requested int
	}{
		{"DeepSeek", "This model's maximum context length is 131072 tokens. However, you requested 131134 tokens " +
			"(122942 in the messages, 8192 in the completion). Please reduce the length of the messages or completion.",
			"invalid_request_error", "invalid_request_error", 131072, 131134},
		{"OpenAI", "This model's maximum context length is 8192 tokens. However, your messages resulted in 8227 tokens. " +
			"Please reduce the length of the messages.", "context_length_exceeded", "invalid_request_error", 8192, 8227},
		{"OpenAI with functions", "This model's maximum context length is 8192 tokens. However, you requested 8213 tokens " +
			"(6683 in the messages, 730 in the functions, and 800 in the completion).", "", "", 8192, 8213},
		{"OpenAI, newer", "Your input exceeds the context window of this model. Please adjust your input and try again.",
			"context_length_exceeded", "invalid_request_error", 0, 0},
		{"code only", "Bad request", "context_length_exceeded", "", 0, 0},
		{"Mistral", "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length",
			"", "invalid_request_error", 32768, 40000},
		{"Anthropic-style", "prompt is too long: 210000 tokens > 200000 maximum", "", "invalid_request_error", 200000, 210000},
		{"Gemini", "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", "", "", 1048576, 1200000},
		{"llama.cpp", "the request exceeds the available context size, try increasing it", "", "exceed_context_size_error", 0, 0},
		{"grouped digits", "This model's maximum context length is 128,000 tokens. However, you requested 130,500 tokens.",
			"", "", 128000, 130500},
		{"lower case", "this model's maximum context length is 4097 tokens. however, you requested 4120 tokens", "", "", 4097, 4120},
		{"absurd number", "maximum context length is 99999999999999999999 tokens", "", "", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !isContextTooLong(tt.msg, tt.code, tt.typ) {
				t.Errorf("not recognised: %q", tt.msg)
			}
			w, r := parseContextLimit(tt.msg)
			if w != tt.window || r != tt.requested {
				t.Errorf("parse = %d, %d; want %d, %d", w, r, tt.window, tt.requested)
			}
		})
	}
	for _, msg := range []string{
		"Model Not Exist",
		"Invalid max_tokens value, the valid range of max_tokens is [1, 8192]",
		"Request too large for gpt-4 on tokens per min (TPM): Limit 10000, Requested 12000.",
		"Rate limit reached for requests",
	} {
		if isContextTooLong(msg, "invalid_request_error", "invalid_request_error") {
			t.Errorf("%q taken for a context error", msg)
		}
	}
}

func TestParseProviderBody(t *testing.T) {
	tests := []struct {
		body       string
		msg, code  string
		nctx, nreq int
	}{
		{`{"error":{"message":"bad","type":"invalid_request_error","code":"x"}}`, "bad", "x", 0, 0},
		{`{"error":{"message":"bad","code":400}}`, "bad", "400", 0, 0},
		{`{"error":{"message":["a","b"]}}`, "a, b", "", 0, 0},
		{`{"error":"plain text"}`, "plain text", "", 0, 0},
		{`{"message":"bare"}`, "bare", "", 0, 0},
		{`{"detail":"Not Found"}`, "Not Found", "", 0, 0},
		{`{"error":{"message":""}}`, "", "", 0, 0},
		{`{"error":{"message":"m","n_ctx":4096,"n_prompt_tokens":5000}}`, "m", "", 4096, 5000},
		{"<html>\n  down\n</html>", "<html> down </html>", "", 0, 0},
		{`{"other":1}`, `{"other":1}`, "", 0, 0},
	}
	for _, tt := range tests {
		pb := parseProviderBody([]byte(tt.body))
		if pb.message != tt.msg || pb.code != tt.code || pb.window != tt.nctx || pb.requested != tt.nreq {
			t.Errorf("parseProviderBody(%s) = %+v", tt.body, pb)
		}
	}
}

// FuzzParseContextLimit: any provider text parses without panicking, to
// counts in range.
func FuzzParseContextLimit(f *testing.F) {
	for _, s := range []string{
		"This model's maximum context length is 65536 tokens. However, you requested 87731 tokens (87731 in the messages, 0 in the completion).",
		"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens.",
		"prompt is too long: 210000 tokens > 200000 maximum",
		"maximum context length is 9,9,9,9,9,9,9,9,9,9,9 tokens",
		"maximum context length is ",
		"> maximum",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		w, r := parseContextLimit(msg)
		if w < 0 || w > maxTokens || r < 0 || r > maxTokens {
			t.Fatalf("parseContextLimit(%q) = %d, %d", msg, w, r)
		}
		_ = isContextTooLong(msg, msg, msg)
	})
}

// FuzzContextRoundTrip: the numbers of both wordings come back out.
func FuzzContextRoundTrip(f *testing.F) {
	f.Add(65536, 87731)
	f.Add(1, 1)
	f.Fuzz(func(t *testing.T, window, requested int) {
		if window <= 0 || window > maxTokens || requested <= 0 || requested > maxTokens {
			return
		}
		for _, msg := range []string{
			fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens "+
				"(%d in the messages, 0 in the completion). Please reduce the length of the messages or completion.",
				window, requested, requested),
			fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. "+
				"Please reduce the length of the messages.", window, requested),
		} {
			if !isContextTooLong(msg, "", "") {
				t.Fatalf("not recognised: %q", msg)
			}
			if w, r := parseContextLimit(msg); w != window || r != requested {
				t.Fatalf("parseContextLimit(%q) = %d, %d", msg, w, r)
			}
		}
	})
}

// FuzzParseProviderBody: any error body yields a bounded message.
func FuzzParseProviderBody(f *testing.F) {
	for _, s := range []string{
		`{"error":{"message":"x","code":"context_length_exceeded","n_ctx":5}}`,
		`{"error":"x"}`, `{"message":[1,{"a":2}]}`, `{"error":null}`, `<html>`, ``, `null`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		pb := parseProviderBody(body)
		if len(pb.message) > maxDetail+len("…") {
			t.Fatalf("message of %d bytes", len(pb.message))
		}
		w, r := parseContextLimit(pb.message)
		if w < 0 || r < 0 {
			t.Fatal("negative count")
		}
	})
}
