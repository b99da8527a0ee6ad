package agent_test

import (
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/agent"
)

func TestRenderPrompt(t *testing.T) {
	tests := []struct {
		name   string
		blocks []agent.PromptBlock
		want   string
	}{
		{"empty", nil, ""},
		{"text", []agent.PromptBlock{{Type: "text", Text: "fix the build"}}, "fix the build"},
		{
			name: "text around a link",
			blocks: []agent.PromptBlock{
				{Type: "text", Text: "look at "},
				{Type: "resource_link", URI: "file:///p/main.go", Name: "main.go"},
				{Type: "text", Text: " please"},
			},
			want: "look at [@main.go](file:///p/main.go) please",
		},
		{
			name:   "link without a name",
			blocks: []agent.PromptBlock{{Type: "resource_link", URI: "file:///p/go.mod"}},
			want:   "[@go.mod](file:///p/go.mod)",
		},
		{
			name: "embedded resources",
			blocks: []agent.PromptBlock{
				{Type: "text", Text: "compare "},
				{Type: "resource", URI: "file:///p/a.txt", Text: "alpha"},
				{Type: "text", Text: " and "},
				{Type: "resource", URI: "file:///p/b.md", Name: "b.md", MimeType: "text/markdown", Text: "beta\n"},
			},
			want: "compare [@a.txt](file:///p/a.txt) and [@b.md](file:///p/b.md)\n\n<context>\n" +
				"<file uri=\"file:///p/a.txt\">\nalpha\n</file>\n" +
				"<file uri=\"file:///p/b.md\" mimeType=\"text/markdown\">\nbeta\n</file>\n</context>",
		},
		{
			name:   "binary resource",
			blocks: []agent.PromptBlock{{Type: "resource", URI: "file:///p/x.png", MimeType: "image/png"}},
			want: "[@x.png](file:///p/x.png)\n\n<context>\n<file uri=\"file:///p/x.png\" mimeType=\"image/png\">\n" +
				"(no text content)\n</file>\n</context>",
		},
		{
			name:   "unsupported block",
			blocks: []agent.PromptBlock{{Type: "text", Text: "see: "}, {Type: "image"}},
			want:   "see: [image content omitted: this agent reads text only]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := agent.RenderPrompt(tt.blocks); got != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}
