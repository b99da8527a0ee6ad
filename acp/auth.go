package acp

import (
	"context"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/llm"
	"github.com/dsh-acp/dsh-acp/internal/slash"
)

// TerminalAuthMethodID is the id of the terminal login method: the client
// runs this binary with the method's args ("login") in a terminal.
const TerminalAuthMethodID = "dsh-acp-login"

// loginArgs are what the client appends to the agent's command for the
// terminal login.
var loginArgs = []string{"login"}

// AuthConfig turns on login: the model client is looked up when a prompt
// needs it, so a key stored by `dsh-acp login` while the daemon runs is
// picked up without a restart, and a removed one stops being used.
type AuthConfig struct {
	// Model returns the model client for the credential in force now
	// (reading the stored credential again): nil with a nil error when
	// there is no key, nil with an error saying why a stored credential is
	// not usable (the error must not hold the key). It is called before
	// every prompt that needs the model, from several goroutines at once.
	Model func() (agent.ModelClient, error)
	// Logout removes the stored credential (ACP logout). Nil: logout is not
	// advertised.
	Logout func() error
	// Command is this binary's absolute path, for clients that launch the
	// login from Zed's older _meta["terminal-auth"] descriptor ("" leaves
	// that descriptor out).
	Command string
}

// newModels is the model client in force (llm.InForce), looked up again
// through Config.Auth when login is on.
func newModels(cfg Config) *llm.InForce {
	var first llm.Streamer
	if cfg.Model != nil {
		first = cfg.Model
	}
	var lookup func() (llm.Streamer, error)
	if cfg.Auth != nil && cfg.Auth.Model != nil {
		lookup = func() (llm.Streamer, error) {
			c, err := cfg.Auth.Model()
			if c == nil {
				return nil, err
			}
			return c, err
		}
	}
	return llm.NewInForce(first, lookup, cfg.Logger)
}

// authRequired is the ACP auth-required error (-32000) for a prompt that
// needs the model when there is no key; its data says what to do.
func (s *Server) authRequired() error {
	msg := "No API key is configured. Log in (Zed offers a Log in button; in a terminal run `dsh-acp login`), " +
		"or set DSH_API_KEY (or DEEPSEEK_API_KEY) in the agent's environment. Commands typed with a leading ! run without a key."
	data := map[string]any{"message": msg}
	if why := s.models.Why(); why != nil {
		data["detail"] = why.Error()
	}
	err := sdk.NewAuthRequired(data)
	err.Message = authRequiredMessage
	return err
}

// authRequiredMessage is the auth-required error's message: clients that
// print only the message (acpx) still say how to log in.
const authRequiredMessage = "Authentication required: run `dsh-acp login` in a terminal (or set DSH_API_KEY)"

// needModel refuses, with auth-required, a prompt that needs the model
// when no key is in force. `!` commands and slash commands never need one
// (those that use the model, and an unknown "/word", say so themselves).
func (s *Server) needModel(blocks []sdk.ContentBlock) error {
	pb := promptBlocks(blocks)
	if _, direct := isDirect(firstText(pb)); direct && len(pb) == 1 || emptyDirect(pb) {
		return nil
	}
	if _, _, _, _, ok := slash.Parse(pb); ok {
		return nil
	}
	if s.models.Refresh() != nil {
		return nil
	}
	if _, ok := slash.Word(firstText(pb)); ok {
		return nil
	}
	return s.authRequired()
}

// noKeyText is what a slash command that needs the model answers when no
// key is in force.
const noKeyText = "This needs the model, and no API key is configured. Log in (Zed offers a Log in button; in a terminal run `dsh-acp login`), " +
	"or set DSH_API_KEY (or DEEPSEEK_API_KEY) in the agent's environment. Slash commands and commands typed with a leading ! work without a key.\n\n"

// authenticate handles the terminal method's id: the login ran in the
// client's terminal, so this only reads the stored credential again. It
// answers auth-required when there is still no key.
func (s *Server) authenticate(p sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	if s.cfg.Auth == nil || p.MethodId != TerminalAuthMethodID {
		return sdk.AuthenticateResponse{}, invalidParams("unknown auth method %q", p.MethodId)
	}
	if s.models.Refresh() == nil {
		return sdk.AuthenticateResponse{}, s.authRequired()
	}
	s.log.Info("authenticate", zap.String("method", p.MethodId))
	return sdk.AuthenticateResponse{}, nil
}

// UnstableLogout is ACP's logout: it removes the stored credential, as
// `dsh-acp logout` does. A key from the environment stays in force.
func (s *Server) UnstableLogout(ctx context.Context, p sdk.UnstableLogoutRequest) (resp sdk.UnstableLogoutResponse, err error) {
	if s.cfg.Auth == nil || s.cfg.Auth.Logout == nil {
		return resp, sdk.NewMethodNotFound(sdk.AgentMethodLogout)
	}
	if err := s.cfg.Auth.Logout(); err != nil {
		s.log.Error("logout failed", zap.Error(err))
		return resp, sdk.NewInternalError(map[string]any{"error": "cannot remove the stored credential: " + err.Error()})
	}
	s.models.Refresh()
	s.log.Info("logout")
	return resp, nil
}
