package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// initializeReply serves one line on cfg and returns the first line
// written back.
func initializeReply(t *testing.T, cfg Config, line string) string {
	t.Helper()
	h := hooks{}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- serve(context.Background(), inR, outW, cfg, h)
		outW.Close()
	}()
	lines := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(outR).ReadString('\n')
		lines <- l
		_, _ = io.Copy(io.Discard, outR)
	}()
	if _, err := io.WriteString(inW, line+"\n"); err != nil {
		t.Fatal(err)
	}
	var reply string
	select {
	case reply = <-lines:
	case <-time.After(20 * time.Second):
		t.Fatalf("no reply to %s", line)
	}
	inW.Close()
	if err := <-served; err != nil && !errors.Is(err, io.ErrClosedPipe) {
		t.Fatal(err)
	}
	return reply
}

// sdkReply is the initialize reply as the SDK's connection wrote it: its
// InitializeResponse through encoding/json — with <, > and & unescaped, as
// the daemon writes its strings (the same JSON text).
func sdkReply(t *testing.T, cfg Config, id, params string) string {
	var p sdk.InitializeRequest
	if err := json.Unmarshal([]byte(params), &p); err != nil {
		t.Fatal(err)
	}
	cfg.defaults()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode((&Server{cfg: cfg}).initAnswer(p).response()); err != nil {
		t.Fatal(err)
	}
	result := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(strings.TrimSuffix(b.String(), "\n"))
	// SDK v0.13 has no SessionCapabilities.Delete: session/delete's {} goes
	// where encoding/json would put the field (after close).
	result = strings.Replace(result, `"close":{},`, `"close":{},"delete":{},`, 1)
	return `{"jsonrpc":"2.0","id":` + id + `,"result":` + result + "}\n"
}

// The initialize reply is encoded by hand (initAnswer.AppendJSON) exactly
// as encoding/json encodes the SDK's InitializeResponse, for every variant
// of the reply: with and without login, logout and the older terminal-auth
// descriptor, any protocol version, string and number ids, strings that
// need escaping. Params the SDK rejects get -32602.
func TestInitializeAnsweredAsTheSDKWould(t *testing.T) {
	base := localConfig(t)
	base.Version = "0.1.0-dev"
	configs := map[string]Config{"no login": base}
	login := base
	login.Auth = &AuthConfig{}
	configs["login"] = login
	full := base
	full.Name, full.Version = "dsh-acp", "v1.2.3 (abc1234, 2026-01-02)"
	full.Auth = &AuthConfig{Logout: func() error { return nil }, Command: "/usr/local/bin/dsh-acp"}
	configs["login, logout, command"] = full
	odd := full
	odd.Version, odd.Auth = "1.0 <beta> \"é\"\n", &AuthConfig{Command: "/opt/d\\sh acp"}
	configs["odd strings"] = odd

	params := []string{
		`{}`,
		`{"protocolVersion":1}`,
		`{"protocolVersion":0}`,
		`{"protocolVersion":7,"clientInfo":{"name":"zed","version":"1"}}`,
		`{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true,"_meta":{"terminal_output":true}}}`,
		`{"protocolVersion":1,"clientCapabilities":{"auth":{"terminal":true}}}`,
		`{"protocolVersion":1,"clientCapabilities":{"_meta":{"terminal-auth":true}}}`,
		`{"protocolVersion":1,"clientCapabilities":{"auth":{"terminal":true},"_meta":{"terminal-auth":true,"terminal_output":true}}}`,
	}
	ids := []string{`1`, `0`, `"init-1"`, `-3`, `"<id>"`}
	for name, cfg := range configs {
		for _, p := range params {
			for _, id := range ids {
				line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"initialize","params":%s}`, id, p)
				if got, want := initializeReply(t, cfg, line), sdkReply(t, cfg, id, p); got != want {
					t.Errorf("%s, %s:\ndaemon %s\nSDK    %s", name, line, got, want)
				}
			}
		}
	}
	got := initializeReply(t, full, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"one"}}`)
	if !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params"`) {
		t.Errorf("bad params answered %s", got)
	}
}

// response is the answer as the SDK's type (Server.Initialize returns it).
func (a initAnswer) response() sdk.InitializeResponse {
	r := sdk.InitializeResponse{
		ProtocolVersion: a.version,
		AgentInfo:       &sdk.Implementation{Name: a.name, Version: a.ver},
		AuthMethods:     []sdk.AuthMethod{},
		AgentCapabilities: sdk.AgentCapabilities{
			LoadSession: true,
			PromptCapabilities: sdk.PromptCapabilities{
				EmbeddedContext: true,
			},
			McpCapabilities: sdk.McpCapabilities{Http: true},
			SessionCapabilities: sdk.SessionCapabilities{
				AdditionalDirectories: &sdk.SessionAdditionalDirectoriesCapabilities{},
				List:                  &sdk.SessionListCapabilities{},
				Resume:                &sdk.SessionResumeCapabilities{},
				Close:                 &sdk.SessionCloseCapabilities{},
			},
		},
	}
	if a.logout {
		r.AgentCapabilities.Auth.Logout = &sdk.LogoutCapabilities{}
	}
	if a.terminal {
		m := &sdk.AuthMethodTerminalInline{
			Id:          TerminalAuthMethodID,
			Name:        loginName,
			Description: sdk.Ptr(loginDescription),
			Args:        loginArgs,
		}
		if a.command != "" {
			m.Meta = map[string]any{"terminal-auth": map[string]any{
				"command": a.command,
				"args":    loginArgs,
				"label":   loginLabel,
			}}
		}
		r.AuthMethods = []sdk.AuthMethod{{Terminal: m}}
	}
	return r
}
