// Command mcpserver serves internal/mcp/mcptest's server over stdio, or,
// with -http, over streamable HTTP on that address (it prints its URL on
// the first line of stdout).
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-acp/dsh-acp/internal/mcp/mcptest"
)

func main() {
	record := flag.String("record", os.Getenv("MCPTEST_RECORD"), "file to record calls and cancellations in")
	dir := flag.String("dir", os.Getenv("MCPTEST_DIR"), "directory write_note writes to")
	addr := flag.String("http", "", "serve streamable HTTP on this address instead of stdio")
	flag.Parse()
	s := mcptest.NewServer(mcptest.Options{Record: *record, Dir: *dir})
	if *addr == "" {
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "mcpserver:", err)
			os.Exit(1)
		}
		return
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpserver:", err)
		os.Exit(1)
	}
	fmt.Printf("http://%s/mcp\n", l.Addr())
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	if err := http.Serve(l, h); err != nil {
		fmt.Fprintln(os.Stderr, "mcpserver:", err)
		os.Exit(1)
	}
}
