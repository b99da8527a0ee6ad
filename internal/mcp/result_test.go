package mcp

import (
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestRenderResult(t *testing.T) {
	size := int64(10)
	for _, tc := range []struct {
		name string
		res  *sdk.CallToolResult
		want string
	}{
		{"text", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a"}, &sdk.TextContent{Text: "b"}}}, "a\nb"},
		{"empty", &sdk.CallToolResult{}, "(no output)"},
		{"structured", &sdk.CallToolResult{StructuredContent: map[string]any{"n": 1}}, `{"n":1}`},
		{"error", &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "bad"}}}, "bad\n[the tool reported an error]"},
		{"media", &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.ImageContent{MIMEType: "image/png", Data: make([]byte, 2048)},
			&sdk.AudioContent{Data: make([]byte, 3<<20)},
		}}, "[image: image/png, 2.0 KiB]\n[audio: unknown type, 3.0 MiB]"},
		{"resources", &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.ResourceLink{URI: "file:///a", Name: "a", MIMEType: "text/plain", Size: &size},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///b", Text: "body"}},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///c", MIMEType: "application/zip", Blob: []byte("zz")}},
			&sdk.EmbeddedResource{},
		}}, "[resource link: file:///a (a), text/plain]\n[resource: file:///b]\nbody\n[resource: file:///c, application/zip, 2 bytes]\n[resource]"},
		{"invalid utf-8", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a\xffb"}}}, "a\uFFFDb"},
	} {
		if got := renderResult(tc.res); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
