module github.com/dsh-acp/dsh-acp

go 1.26.8

require (
	github.com/coder/acp-go-sdk v0.13.0 // indirect
	github.com/sashabaranov/go-openai v1.43.0 // indirect
	github.com/sourcegraph/jsonrpc2 v0.2.3 // indirect
	go.uber.org/multierr v1.10.0 // indirect
	go.uber.org/zap v1.28.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	mvdan.cc/sh/v3 v3.14.1 // indirect
)
