package acp

import (
	"encoding/json"
	"strconv"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/internal/rpc"
	"github.com/dsh-acp/dsh-acp/internal/wirejson"
	"github.com/dsh-acp/dsh-acp/presentation"
)

// The initialize reply is answered by Preempt, as the request is read, so
// every session/new behind it on the wire sees the client's capabilities.
// Its result is appended here by hand (initAnswer.AppendJSON, the one
// encoder of this shape): encoding/json would build its reflection caches
// for the response's dozen types on the way to the first reply, which cost
// about as much as everything else a cold start waits for. A test holds
// the bytes equal to encoding/json's for the SDK's InitializeResponse.

// initAnswer is everything an initialize reply says.
type initAnswer struct {
	version   sdk.ProtocolVersion
	name, ver string // agentInfo
	logout    bool   // auth.logout is advertised (only with an auth method)
	// terminal offers the terminal login method; command, when set, also
	// describes it in Zed's older _meta["terminal-auth"] form.
	terminal bool
	command  string
}

// initAnswer answers p: the protocol version agreed on, and the login the
// client can run (clientCapabilities.auth.terminal, or Zed's older
// _meta["terminal-auth"] flag); none when login is not configured.
func (s *Server) initAnswer(p sdk.InitializeRequest) initAnswer {
	version := sdk.ProtocolVersion(sdk.ProtocolVersionNumber)
	if p.ProtocolVersion < version && p.ProtocolVersion >= 1 {
		version = p.ProtocolVersion
	}
	a := initAnswer{version: version, name: s.cfg.Name, ver: s.cfg.Version}
	if auth := s.cfg.Auth; auth != nil {
		legacy, _ := p.ClientCapabilities.Meta["terminal-auth"].(bool)
		a.terminal = p.ClientCapabilities.Auth.Terminal || legacy
		a.logout = auth.Logout != nil && a.terminal // only with an auth method to log in again
		if a.terminal && legacy {
			a.command = auth.Command
		}
	}
	return a
}

// Texts of the terminal login method.
const (
	loginName        = "Log in with an API key"
	loginDescription = "Runs `dsh-acp login` in a terminal: enter your provider's API key; it is checked and stored for you alone."
	loginLabel       = "dsh-acp login"
)

// AppendJSON appends the answer's result exactly as encoding/json encodes
// the SDK's InitializeResponse for it.
func (a initAnswer) AppendJSON(b []byte) []byte {
	str := wirejson.AppendString
	args := func(b []byte) []byte {
		b = append(b, '[')
		for i, arg := range loginArgs {
			if i > 0 {
				b = append(b, ',')
			}
			b = str(b, arg)
		}
		return append(b, ']')
	}
	b = append(b, `{"agentCapabilities":{"auth":{`...)
	if a.logout {
		b = append(b, `"logout":{}`...)
	}
	b = append(b, `},"loadSession":true,"mcpCapabilities":{"http":true},"promptCapabilities":{"embeddedContext":true},`+
		`"sessionCapabilities":{"additionalDirectories":{},"close":{},"delete":{},"list":{},"resume":{}}},"agentInfo":{"name":`...)
	b = str(b, a.name)
	b = append(b, `,"version":`...)
	b = str(b, a.ver)
	b = append(b, `},"authMethods":[`...)
	if a.terminal {
		b = append(b, '{')
		if a.command != "" {
			b = append(b, `"_meta":{"terminal-auth":{"args":`...)
			b = args(b)
			b = append(b, `,"command":`...)
			b = str(b, a.command)
			b = append(b, `,"label":`...)
			b = str(b, loginLabel)
			b = append(b, `}},`...)
		}
		b = append(b, `"args":`...)
		b = args(b)
		b = append(b, `,"description":`...)
		b = str(b, loginDescription)
		b = append(b, `,"id":`...)
		b = str(b, TerminalAuthMethodID)
		b = append(b, `,"name":`...)
		b = str(b, loginName)
		b = append(b, `,"type":"terminal"}`...)
	}
	b = append(b, `],"protocolVersion":`...)
	b = strconv.AppendInt(b, int64(a.version), 10)
	return append(b, '}')
}

// initialize answers an initialize request: it records the client's
// capabilities, logs, and writes the reply.
func (s *Server) initialize(r *rpc.Request) {
	var p sdk.InitializeRequest
	if err := decodeParams(r.Params, &p); err != nil {
		r.Reply(nil, err)
		return
	}
	s.noteCaps(p, r.Params)
	s.logInitialize(p)
	r.Reply(s.initAnswer(p), nil)
}

// noteCaps records the client's capabilities from its initialize request
// (params: the same request raw, for the fields the SDK lacks).
func (s *Server) noteCaps(p sdk.InitializeRequest, params json.RawMessage) {
	caps := capsFrom(p.ClientCapabilities)
	caps.present.Session = presentation.SessionCapsFrom(params)
	s.mu.Lock()
	s.caps = caps
	s.mu.Unlock()
}

func (s *Server) logInitialize(p sdk.InitializeRequest) {
	s.log.Info("initialize", zap.Int("clientVersion", int(p.ProtocolVersion)),
		zap.Bool("terminalOutput", presentation.CapsFrom(p.ClientCapabilities).Terminal))
}
