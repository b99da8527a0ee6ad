package llm_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/llm"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

// bigRequest is a request of about n bytes.
func bigRequest(n int) llm.Request {
	return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: strings.Repeat("x", n)}}}
}

// The fake, made to enforce a window, answers a request past it with the
// provider's context-length error in either wording; the client recognises
// both, names the window, does not retry, and the script is not consumed.
func TestContextTooLongFromTheFake(t *testing.T) {
	for _, w := range []struct {
		name    string
		wording llmtest.Wording
		text    string
	}{
		{"DeepSeek", llmtest.DeepSeekWording, "in the messages, 0 in the completion"},
		{"OpenAI", llmtest.OpenAIWording, "your messages resulted in"},
	} {
		t.Run(w.name, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Reply("fits"))
			srv.SetContextWindow(200, w.wording)
			c := newClient(t, srv, &sleeps{})
			req := bigRequest(2000)
			got := announced(&req)
			_, err := c.Stream(t.Context(), req, nil)
			var e *llm.Error
			if !errors.As(err, &e) || !errors.Is(err, llm.ErrContextTooLong) || !errors.Is(err, llm.ErrRequest) ||
				!errors.Is(err, llm.ErrPermanent) {
				t.Fatalf("err = %v, want ErrContextTooLong", err)
			}
			sent := srv.Last()
			if !sent.OverWindow || e.ContextWindow != 200 || e.RequestedTokens != sent.PromptTokens || e.Status != 400 {
				t.Errorf("error %+v for a request of %d tokens", e, sent.PromptTokens)
			}
			if !strings.Contains(err.Error(), "the conversation is longer than the model's context window (HTTP 400): "+
				"This model's maximum context length is 200 tokens.") || !strings.Contains(err.Error(), w.text) {
				t.Errorf("error text %q", err)
			}
			if len(srv.Requests()) != 1 || len(*got) != 0 || srv.Remaining() != 1 {
				t.Errorf("%d requests, %d retries, %d scripted left", len(srv.Requests()), len(*got), srv.Remaining())
			}
			// A request that fits gets the scripted answer.
			if resp, err := c.Stream(t.Context(), simpleRequest(), nil); err != nil || resp.Text != "fits" {
				t.Errorf("small request: %+v %v", resp, err)
			}
		})
	}
}

// The other shapes the answer comes in.
func TestContextTooLongShapes(t *testing.T) {
	tests := []struct {
		name   string
		script llmtest.Response
		window int
	}{
		{"HTTP 413", llmtest.Status(413), 0},
		{"error event inside the stream", llmtest.Stream(llmtest.Raw(`data: {"error":{"message":"Your input exceeds the ` +
			`context window of this model.","type":"invalid_request_error","code":"context_length_exceeded"}}` + "\n\n")), 0},
		{"llama.cpp", llmtest.Response{Status: 400, Body: `{"error":{"code":400,"message":"the request exceeds the available ` +
			`context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}`}, 4096},
		{"bare message body", llmtest.Response{Status: 400, Body: `{"message":"This model's maximum context length is ` +
			`1048565 tokens. However, you requested 1551241 tokens.","type":"invalid_request_error"}`}, 1048565},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t, tt.script)
			_, err := newClient(t, srv, &sleeps{}).Stream(t.Context(), simpleRequest(), nil)
			var e *llm.Error
			if !errors.As(err, &e) || !errors.Is(err, llm.ErrContextTooLong) || e.ContextWindow != tt.window {
				t.Fatalf("err = %v (%+v), want ErrContextTooLong with window %d", err, e, tt.window)
			}
			if len(srv.Requests()) != 1 {
				t.Errorf("%d requests", len(srv.Requests()))
			}
		})
	}
}

func TestContextWindowTable(t *testing.T) {
	for _, m := range []string{"deepseek-flash", "deepseek-chat", "deepseek-reasoner", "deepseek-v4-flash", "deepseek-v4-pro", " DeepSeek-Chat "} {
		if n, ok := llm.ContextWindow(m); !ok || n != 1_000_000 {
			t.Errorf("ContextWindow(%q) = %d, %v", m, n, ok)
		}
	}
	if n, ok := llm.ContextWindow("gpt-4o"); ok || n != 0 {
		t.Errorf("unknown model: %d, %v", n, ok)
	}
}
