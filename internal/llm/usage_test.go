package llm_test

import (
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/llm"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

func TestUsage(t *testing.T) {
	deepSeekFinal := `data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":""},` +
		`"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,` +
		`"prompt_cache_hit_tokens":4,"prompt_cache_miss_tokens":6,"completion_tokens_details":{"reasoning_tokens":3}}}` + "\n\n"
	noTotal := `data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2}}` + "\n\n"
	tests := []struct {
		name   string
		ignore bool
		script llmtest.Response
		want   func(req llmtest.Request) llm.Usage
	}{
		{
			name:   "counted by the fake's rule",
			script: llmtest.Reply("Hel", "lo"),
			want: func(req llmtest.Request) llm.Usage {
				p, c := llmtest.Tokens(len(req.Raw)), llmtest.Tokens(len("Hello"))
				return llm.Usage{PromptTokens: p, CompletionTokens: c, TotalTokens: p + c, Known: true}
			},
		},
		{
			name: "scripted, OpenAI shape with cache and reasoning details",
			script: func() llmtest.Response {
				r := llmtest.Reply("ok")
				r.Usage = &llmtest.Usage{Prompt: 1000, Completion: 50, Cached: 600, Reasoning: 20}
				return r
			}(),
			want: func(llmtest.Request) llm.Usage {
				return llm.Usage{PromptTokens: 1000, CompletionTokens: 50, TotalTokens: 1050, CachedTokens: 600,
					ReasoningTokens: 20, Known: true}
			},
		},
		{
			name:   "DeepSeek shape on the finishing chunk",
			ignore: true,
			script: llmtest.Stream(llmtest.Say("ok"), llmtest.Raw(deepSeekFinal)),
			want: func(llmtest.Request) llm.Usage {
				return llm.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15, CachedTokens: 4,
					ReasoningTokens: 3, Known: true}
			},
		},
		{
			name:   "total left out",
			ignore: true,
			script: llmtest.Stream(llmtest.Say("ok"), llmtest.Finish("stop"), llmtest.Raw(noTotal)),
			want: func(llmtest.Request) llm.Usage {
				return llm.Usage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9, Known: true}
			},
		},
		{
			name:   "provider ignores stream_options",
			ignore: true,
			script: llmtest.Reply("ok"),
			want:   func(llmtest.Request) llm.Usage { return llm.Usage{} },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t, tt.script)
			if tt.ignore {
				srv.IgnoreUsage()
			}
			resp, err := newClient(t, srv, &sleeps{}).Stream(t.Context(), simpleRequest(), nil)
			if err != nil {
				t.Fatal(err)
			}
			req := srv.Last()
			if !req.AsksUsage() {
				t.Errorf("request does not ask for usage: %s", req.Raw)
			}
			if want := tt.want(req); resp.Usage != want {
				t.Errorf("usage = %+v, want %+v", resp.Usage, want)
			}
			if resp.Text != "ok" && resp.Text != "Hello" {
				t.Errorf("text %q", resp.Text)
			}
		})
	}
}

// A provider that refuses the stream_options field is asked again without
// it, silently, and never sent it again by that client.
func TestStreamOptionsRefused(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.Error(400, "Unrecognized request argument supplied: stream_options"),
		llmtest.Reply("first"),
		llmtest.Reply("second"))
	c := newClient(t, srv, &sleeps{})
	req := simpleRequest()
	got := announced(&req)
	for _, want := range []string{"first", "second"} {
		resp, err := c.Stream(t.Context(), req, nil)
		if err != nil || resp.Text != want || resp.Usage.Known {
			t.Fatalf("resp %+v err %v", resp, err)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || !reqs[0].AsksUsage() {
		t.Fatalf("%d requests", len(reqs))
	}
	for _, r := range reqs[1:] {
		if strings.Contains(string(r.Raw), "stream_options") {
			t.Errorf("stream_options sent again: %s", r.Raw)
		}
	}
	if len(*got) != 0 {
		t.Errorf("announced %v", *got)
	}
}
