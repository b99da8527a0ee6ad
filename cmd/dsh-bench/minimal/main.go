// Command minimal is dsh-bench's start-up baseline: a Go program that
// answers one JSON-RPC line and exits at the end of its input.
package main

import (
	"bufio"
	"os"
)

func main() {
	r := bufio.NewReader(os.Stdin)
	if _, err := r.ReadBytes('\n'); err != nil {
		return
	}
	os.Stdout.WriteString("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":1}}\n")
	r.ReadBytes('\n')
}
