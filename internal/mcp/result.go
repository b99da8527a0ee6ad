package mcp

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// renderResult is the text the model reads of a completed call, before the
// cap: each text content as is; images, audio and resources as one
// bracketed line each (an embedded text resource also gives its text); the
// structured content as JSON when there is no other content; "(no output)"
// when there is nothing; and "[the tool reported an error]" last when
// isError is set.
func renderResult(r *sdk.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if s := renderContent(c); s != "" {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 && r.StructuredContent != nil {
		if b, err := json.Marshal(r.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "(no output)")
	}
	if r.IsError {
		parts = append(parts, "[the tool reported an error]")
	}
	return strings.ToValidUTF8(strings.Join(parts, "\n"), "\uFFFD")
}

// renderContent is one content item as text.
func renderContent(c sdk.Content) string {
	switch c := c.(type) {
	case *sdk.TextContent:
		return c.Text
	case *sdk.ImageContent:
		return fmt.Sprintf("[image: %s, %s]", orUnknown(c.MIMEType), size(len(c.Data)))
	case *sdk.AudioContent:
		return fmt.Sprintf("[audio: %s, %s]", orUnknown(c.MIMEType), size(len(c.Data)))
	case *sdk.ResourceLink:
		return "[resource link: " + describeResource(c.URI, c.Name, c.MIMEType) + "]"
	case *sdk.EmbeddedResource:
		if c.Resource == nil {
			return "[resource]"
		}
		rc := c.Resource
		if rc.Blob != nil || rc.Text == "" {
			return fmt.Sprintf("[resource: %s, %s]", describeResource(rc.URI, "", rc.MIMEType), size(len(rc.Blob)))
		}
		return "[resource: " + describeResource(rc.URI, "", rc.MIMEType) + "]\n" + rc.Text
	case nil:
		return ""
	}
	if b, err := json.Marshal(c); err == nil {
		return "[content: " + string(b) + "]"
	}
	return "[content]"
}

func describeResource(uri, name, mime string) string {
	s := uri
	if name != "" && name != uri {
		s += " (" + name + ")"
	}
	if mime != "" {
		s += ", " + mime
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown type"
	}
	return s
}

// size writes n bytes for a reader.
func size(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
