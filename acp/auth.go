package acp

import (
	"context"
	"errors"
	"sync"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/llm"
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

// models holds the model client in force. It is the agent.ModelClient every
// session is given, so all sessions follow a login or logout at once.
type models struct {
	auth *AuthConfig // nil: the model is fixed
	log  *zap.Logger

	mu      sync.Mutex
	current agent.ModelClient
	why     error // why current is nil, when Model said
}

func newModels(cfg Config) *models {
	m := &models{auth: cfg.Auth, log: cfg.Logger, current: cfg.Model}
	if c, ok := cfg.Model.(*llm.Client); ok && c == nil {
		m.current = nil // a typed nil is as good as none
	}
	return m
}

// refresh asks AuthConfig.Model again (when there is one) and returns the
// client in force, nil when there is none.
func (m *models) refresh() agent.ModelClient {
	if m.auth == nil || m.auth.Model == nil {
		return m.get()
	}
	c, err := m.auth.Model()
	if c != nil {
		err = nil
	}
	m.mu.Lock()
	changed := (m.current == nil) != (c == nil)
	m.current, m.why = c, err
	m.mu.Unlock()
	if changed {
		m.log.Info("model credential", zap.Bool("available", c != nil))
	}
	if err != nil {
		m.log.Warn("no usable model credential", zap.Error(err))
	}
	return c
}

func (m *models) get() agent.ModelClient {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.current
}

// errNoModel ends a model request that started after a logout.
var errNoModel = errors.New("no API key: the credential was removed (log in again)")

// Stream implements agent.ModelClient with the client in force.
func (m *models) Stream(ctx context.Context, req llm.Request, onDelta func(llm.Delta)) (llm.Response, error) {
	c := m.get()
	if c == nil {
		return llm.Response{}, errNoModel
	}
	return c.Stream(ctx, req, onDelta)
}

// ListModels lists the provider's models through the client in force.
func (m *models) ListModels(ctx context.Context) ([]llm.Model, error) {
	lister, ok := m.get().(modelLister)
	if !ok {
		return nil, errors.New("no model client that lists models")
	}
	return lister.ListModels(ctx)
}

// authRequired is the ACP auth-required error (-32000) for a prompt that
// needs the model when there is no key; its data says what to do.
func (m *models) authRequired() error {
	msg := "No API key is configured. Log in (Zed offers a Log in button; in a terminal run `dsh-acp login`), " +
		"or set DSH_API_KEY (or DEEPSEEK_API_KEY) in the agent's environment. Commands typed with a leading ! run without a key."
	data := map[string]any{"message": msg}
	m.mu.Lock()
	if m.why != nil {
		data["detail"] = m.why.Error()
	}
	m.mu.Unlock()
	return sdk.NewAuthRequired(data)
}

// needModel refuses, with auth-required, a prompt that needs the model
// when no key is in force. `!` commands never need one.
func (s *Server) needModel(blocks []sdk.ContentBlock) error {
	pb := promptBlocks(blocks)
	if _, direct := isDirect(firstText(pb)); direct && len(pb) == 1 {
		return nil
	}
	if s.models.refresh() != nil {
		return nil
	}
	return s.models.authRequired()
}

// authenticate handles the terminal method's id: the login ran in the
// client's terminal, so this only reads the stored credential again. It
// answers auth-required when there is still no key.
func (s *Server) authenticate(p sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	if s.cfg.Auth == nil || p.MethodId != TerminalAuthMethodID {
		return sdk.AuthenticateResponse{}, invalidParams("unknown auth method %q", p.MethodId)
	}
	if s.models.refresh() == nil {
		return sdk.AuthenticateResponse{}, s.models.authRequired()
	}
	s.log.Info("authenticate", zap.String("method", p.MethodId))
	return sdk.AuthenticateResponse{}, nil
}

// UnstableLogout is ACP's logout: it removes the stored credential, as
// `dsh-acp logout` does. A key from the environment stays in force.
func (s *Server) UnstableLogout(ctx context.Context, p sdk.UnstableLogoutRequest) (resp sdk.UnstableLogoutResponse, err error) {
	defer guarded(s.log, "logout", &err)
	if s.cfg.Auth == nil || s.cfg.Auth.Logout == nil {
		return resp, sdk.NewMethodNotFound(sdk.AgentMethodLogout)
	}
	if err := s.cfg.Auth.Logout(); err != nil {
		s.log.Error("logout failed", zap.Error(err))
		return resp, sdk.NewInternalError(map[string]any{"error": "cannot remove the stored credential: " + err.Error()})
	}
	s.models.refresh()
	s.log.Info("logout")
	return resp, nil
}
