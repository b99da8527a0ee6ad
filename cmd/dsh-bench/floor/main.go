// Command floor is a start-up reference for dsh-bench: ../minimal linked
// with every third-party library the daemon links (the list is
// `go list -deps ./cmd/dsh-acp` outside the module, less what these pull
// in), so their package initialisation and binary size count, and nothing
// else.
package main

import (
	"bufio"
	"os"

	_ "charm.land/bubbletea/v2"
	_ "github.com/charmbracelet/x/ansi"
	_ "github.com/charmbracelet/x/term"
	_ "github.com/coder/acp-go-sdk"
	_ "github.com/go-git/go-git/v5/plumbing/format/gitignore"
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "github.com/sashabaranov/go-openai"
	_ "github.com/sourcegraph/jsonrpc2"
	_ "go.uber.org/zap"
	_ "golang.org/x/crypto/ssh"
	_ "golang.org/x/crypto/ssh/agent"
	_ "golang.org/x/crypto/ssh/knownhosts"
	_ "golang.org/x/sys/unix"
	_ "mvdan.cc/sh/v3/expand"
	_ "mvdan.cc/sh/v3/syntax"
)

func main() {
	r := bufio.NewReader(os.Stdin)
	if _, err := r.ReadBytes('\n'); err != nil {
		return
	}
	os.Stdout.WriteString("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":1}}\n")
	r.ReadBytes('\n')
}
