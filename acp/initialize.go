package acp

import (
	"encoding/json"
	"strconv"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/acp/ingress"
	"github.com/dsh-acp/dsh-acp/presentation"
)

// The initialize reply is answered on the guard's goroutine, as the request
// arrives, with a line encoded here by hand: the SDK's path to it (a pipe
// hop to its reader, a goroutine, a second decode, and encoding/json
// building its reflection caches for the response's dozen types, the first
// time each is seen) cost about as much as everything else the first reply
// waits for. The line is byte for byte what the SDK would write (a test
// compares the two for every variant); a request the fast path does not
// take (params the SDK would reject, an id or a string that needs escaping)
// goes to the SDK as before, which answers it through Server.Initialize.

// initAnswer is everything an initialize reply says.
type initAnswer struct {
	version   sdk.ProtocolVersion
	name, ver string // agentInfo
	logout    bool   // auth.logout is advertised
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
		a.logout = auth.Logout != nil
		legacy, _ := p.ClientCapabilities.Meta["terminal-auth"].(bool)
		a.terminal = p.ClientCapabilities.Auth.Terminal || legacy
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
				List:   &sdk.SessionListCapabilities{},
				Resume: &sdk.SessionResumeCapabilities{},
				Close:  &sdk.SessionCloseCapabilities{},
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

// appendResult appends the answer's result as the SDK encodes response();
// false when one of its strings needs more than plain quoting (the SDK's
// encoder then writes it).
func (a initAnswer) appendResult(b []byte) ([]byte, bool) {
	ok := true
	str := func(b []byte, s string) []byte {
		if !plainJSON(s) {
			ok = false
			return b
		}
		return append(append(append(b, '"'), s...), '"')
	}
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
		`"sessionCapabilities":{"close":{},"list":{},"resume":{}}},"agentInfo":{"name":`...)
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
	return append(b, '}'), ok
}

// plainJSON reports whether s encodes as itself between quotes: printable
// ASCII, and nothing encoding/json escapes (quote, backslash, <, >, &).
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// plainID reports whether the raw id is written back unchanged by the
// SDK: a number, or a string of plain text.
func plainID(id json.RawMessage) bool {
	if len(id) >= 2 && id[0] == '"' && id[len(id)-1] == '"' {
		return plainJSON(string(id[1 : len(id)-1]))
	}
	for _, c := range id {
		if (c < '0' || c > '9') && c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' {
			return false
		}
	}
	return len(id) > 0
}

// answerInitialize answers an initialize request m itself, as the SDK
// would: it records the client's capabilities, logs, and writes the reply;
// false, having done nothing, when the SDK must answer it (see above).
func (s *Server) answerInitialize(m ingress.Message) bool {
	if !plainID(m.ID) {
		return false
	}
	var p sdk.InitializeRequest
	if json.Unmarshal(m.Params, &p) != nil || p.Validate() != nil {
		return false
	}
	line := append(append(make([]byte, 0, 1024), `{"jsonrpc":"2.0","id":`...), m.ID...)
	line = append(line, `,"result":`...)
	line, ok := s.initAnswer(p).appendResult(line)
	if !ok {
		return false
	}
	s.noteCaps(p)
	s.logInitialize(p)
	_, _ = s.out.Write(append(line, "}\n"...)) // a failed write marks stdout broken
	return true
}

// noteCaps records the client's capabilities from its initialize request.
func (s *Server) noteCaps(p sdk.InitializeRequest) {
	caps := presentation.CapsFrom(p.ClientCapabilities)
	s.mu.Lock()
	s.caps = caps
	s.mu.Unlock()
}

func (s *Server) logInitialize(p sdk.InitializeRequest) {
	s.log.Info("initialize", zap.Int("clientVersion", int(p.ProtocolVersion)),
		zap.Bool("terminalOutput", presentation.CapsFrom(p.ClientCapabilities).Terminal))
}
