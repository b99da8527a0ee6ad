// Package mcptest is a small MCP server for tests, on the official Go SDK.
// It offers a read-only tool (echo), a writing tool (write_note), a slow
// tool (slow) that records its cancellation, and a few more to exercise
// results: big (long text), picture (an image), fail (isError), grow
// (adds a tool, so the server announces a changed tool list).
//
// Every call and every cancellation is appended to the record file, one
// line each ("call echo", "cancelled slow"), so a test in another process
// can see what the server saw. The binary in ../testdata/mcpserver serves
// it over stdio or streamable HTTP.
package mcptest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a server.
type Options struct {
	// Record is the file calls and cancellations are appended to ("":
	// none).
	Record string
	// Dir is where write_note writes (required for it to succeed).
	Dir string
}

// Recorder appends lines to a file; safe for concurrent use.
type recorder struct {
	mu   sync.Mutex
	path string
}

func (r *recorder) line(format string, args ...any) {
	if r.path == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	f, err := os.OpenFile(r.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, format+"\n", args...)
}

// EchoArgs are echo's arguments.
type EchoArgs struct {
	Text string `json:"text" jsonschema:"the text to echo back"`
}

// NoteArgs are write_note's arguments.
type NoteArgs struct {
	Name string `json:"name" jsonschema:"the note's file name"`
	Text string `json:"text" jsonschema:"what to write"`
}

// SlowArgs are slow's arguments.
type SlowArgs struct {
	Ms int `json:"ms" jsonschema:"how long to take, in milliseconds"`
}

// BigArgs are big's arguments.
type BigArgs struct {
	N int `json:"n" jsonschema:"how many characters to return"`
}

// Empty is the arguments of a tool that takes none.
type Empty struct{}

// NewServer returns the test server.
func NewServer(o Options) *mcp.Server {
	rec := &recorder{path: o.Record}
	s := mcp.NewServer(&mcp.Implementation{Name: "mcptest", Version: "1"}, nil)
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back.", Annotations: readOnly},
		func(ctx context.Context, req *mcp.CallToolRequest, a EchoArgs) (*mcp.CallToolResult, any, error) {
			rec.line("call echo")
			return text("echo: " + a.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "write_note", Description: "Write a note to a file."},
		func(ctx context.Context, req *mcp.CallToolRequest, a NoteArgs) (*mcp.CallToolResult, any, error) {
			rec.line("call write_note")
			if o.Dir == "" || a.Name == "" || strings.ContainsAny(a.Name, `/\`) {
				return nil, nil, fmt.Errorf("cannot write note %q", a.Name)
			}
			if err := os.WriteFile(filepath.Join(o.Dir, a.Name), []byte(a.Text), 0o600); err != nil {
				return nil, nil, err
			}
			return text(fmt.Sprintf("wrote %d bytes to %s", len(a.Text), a.Name)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Take a while."},
		func(ctx context.Context, req *mcp.CallToolRequest, a SlowArgs) (*mcp.CallToolResult, any, error) {
			rec.line("call slow")
			t := time.NewTimer(time.Duration(a.Ms) * time.Millisecond)
			defer t.Stop()
			select {
			case <-t.C:
				return text("done after " + (time.Duration(a.Ms) * time.Millisecond).String()), nil, nil
			case <-ctx.Done():
				rec.line("cancelled slow")
				return nil, nil, ctx.Err()
			}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Return a long text.", Annotations: readOnly},
		func(ctx context.Context, req *mcp.CallToolRequest, a BigArgs) (*mcp.CallToolResult, any, error) {
			rec.line("call big")
			var b strings.Builder
			for i := 0; b.Len() < a.N; i++ {
				fmt.Fprintf(&b, "line %d\n", i)
			}
			return text(b.String()[:max(a.N, 0)]), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "picture", Description: "Return a picture.", Annotations: readOnly},
		func(ctx context.Context, req *mcp.CallToolRequest, _ Empty) (*mcp.CallToolResult, any, error) {
			rec.line("call picture")
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "a red dot"},
				&mcp.ImageContent{MIMEType: "image/png", Data: []byte("\x89PNG fake")},
			}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Fail.", Annotations: readOnly},
		func(ctx context.Context, req *mcp.CallToolRequest, _ Empty) (*mcp.CallToolResult, any, error) {
			rec.line("call fail")
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "it broke"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "grow", Description: "Add the tool grown."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ Empty) (*mcp.CallToolResult, any, error) {
			rec.line("call grow")
			mcp.AddTool(s, &mcp.Tool{Name: "grown", Description: "A tool that was added.", Annotations: readOnly},
				func(ctx context.Context, req *mcp.CallToolRequest, _ Empty) (*mcp.CallToolResult, any, error) {
					rec.line("call grown")
					return text("grown"), nil, nil
				})
			return text("added grown"), nil, nil
		})
	return s
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
