package agent

import (
	"fmt"
	"path"
	"strings"
)

// PromptBlock is one block of a user prompt, shaped like ACP's content
// blocks without depending on the ACP SDK.
type PromptBlock struct {
	// Type is "text", "resource_link", "resource" (an embedded text
	// resource), "blob" (an embedded binary resource: only its URI is
	// given to the model), or another ACP block type such as "image" or
	// "audio" (rendered as a placeholder; see Unsent).
	Type string
	// Text is a text block's text, or an embedded resource's contents.
	Text string
	// URI and Name identify a resource_link or resource.
	URI  string
	Name string
	// MimeType is a resource's media type, when known.
	MimeType string
}

// RenderPrompt renders prompt blocks to the text the model reads. Text
// blocks and mentions run together as the user wrote them (a mention as
// [@name](uri)); the contents of embedded resources follow in a context
// section, one <file> element each.
func RenderPrompt(blocks []PromptBlock) string {
	var body, ctx strings.Builder
	for _, b := range blocks {
		switch b.Type {
		case "text":
			body.WriteString(b.Text)
		case "resource_link":
			body.WriteString(mention(b))
		case "resource":
			body.WriteString(mention(b))
			writeResource(&ctx, b)
		case "blob":
			body.WriteString(mention(b))
			fmt.Fprintf(&body, " [binary content not attached: this agent reads text only]")
		default:
			fmt.Fprintf(&body, "[%s content omitted: this agent reads text only]", b.Type)
		}
	}
	if ctx.Len() == 0 {
		return body.String()
	}
	return body.String() + "\n\n<context>\n" + ctx.String() + "</context>"
}

func mention(b PromptBlock) string {
	name := b.Name
	if name == "" {
		name = path.Base(b.URI)
	}
	return fmt.Sprintf("[@%s](%s)", name, b.URI)
}

func writeResource(w *strings.Builder, b PromptBlock) {
	fmt.Fprintf(w, "<file uri=%q", b.URI)
	if b.MimeType != "" {
		fmt.Fprintf(w, " mimeType=%q", b.MimeType)
	}
	w.WriteString(">\n")
	if b.Text == "" {
		w.WriteString("(no text content)\n")
	} else {
		w.WriteString(b.Text)
		if !strings.HasSuffix(b.Text, "\n") {
			w.WriteByte('\n')
		}
	}
	w.WriteString("</file>\n")
}

// Unsent names the blocks whose content the model is not given (images,
// audio, binary resources, unknown types), one short phrase each, in order;
// nil when every block reaches the model.
func Unsent(blocks []PromptBlock) []string {
	var out []string
	for _, b := range blocks {
		switch b.Type {
		case "text", "resource_link", "resource":
		case "blob":
			out = append(out, "the binary content of "+mention(b))
		default:
			out = append(out, "an "+b.Type+" block")
		}
	}
	return out
}

// unsentNote tells the user what of their prompt the model did not get.
func unsentNote(unsent []string) string {
	return "Not sent to the model (this agent reads text only): " + strings.Join(unsent, ", ") +
		". The model was told something was left out.\n\n"
}
