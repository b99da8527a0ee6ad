package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/credentials"
	"github.com/dsh-acp/dsh-acp/internal/llm"
)

// credentialInputs is what the configuration says about the key, endpoint
// and model; an endpoint or model left at its default is not explicit.
func credentialInputs(cfg config) credentials.Inputs {
	in := credentials.Inputs{EnvKey: cfg.APIKey, DefaultBaseURL: defaultBaseURL, DefaultModel: defaultModel}
	if cfg.BaseURLSet {
		in.BaseURL = cfg.BaseURL
	}
	if cfg.ModelSet {
		in.Model = cfg.Model
	}
	return in
}

// credentialStore is the store of `dsh-acp login` in the user's config
// directory.
func credentialStore() (*credentials.Store, error) {
	dir, err := credentials.DefaultDir(os.Getenv)
	if err != nil {
		return nil, err
	}
	return credentials.NewStore(dir), nil
}

// modelSource resolves the credential in force each time it is asked (the
// environment's key, else the stored one) and builds a model client only
// when the credential changed. Safe for concurrent use.
type modelSource struct {
	in    credentials.Inputs
	store *credentials.Store // nil: no config directory is known
	build func(credentials.Credential) agent.ModelClient

	mu     sync.Mutex
	last   credentials.Credential
	client agent.ModelClient
}

// current resolves the credential and returns it with its client (nil when
// there is no key).
func (m *modelSource) current() (credentials.Resolved, agent.ModelClient) {
	r := credentials.Resolve(m.in, m.load)
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case r.APIKey == "":
		m.client, m.last = nil, credentials.Credential{}
	case m.client == nil || r.Credential != m.last:
		m.client, m.last = m.build(r.Credential), r.Credential
	}
	return r, m.client
}

func (m *modelSource) load() (credentials.Credential, error) {
	if m.store == nil {
		return credentials.Credential{}, credentials.ErrNotFound
	}
	return m.store.Load()
}

// Model is acp.AuthConfig.Model.
func (m *modelSource) Model() (agent.ModelClient, error) {
	r, c := m.current()
	if c == nil && r.SetAside != "" {
		return nil, errors.New(r.SetAside)
	}
	return c, nil
}

// Logout is acp.AuthConfig.Logout: removing nothing is not an error.
func (m *modelSource) Logout() error {
	if m.store == nil {
		return nil
	}
	if err := m.store.Remove(); err != nil && !errors.Is(err, credentials.ErrNotFound) {
		return err
	}
	return nil
}

// runAuthCommand runs `dsh-acp login` or `dsh-acp logout`: 0 when logged in
// (logged out), 1 otherwise. Nothing it prints holds the key.
func runAuthCommand(cfg config) int {
	store, err := credentialStore()
	if err != nil {
		fmt.Fprintf(os.Stderr, "dsh-acp %s: %v\n", cfg.Command, err)
		return 1
	}
	if cfg.Command == "logout" {
		return runLogout(cfg, store)
	}
	return runLogin(cfg, store)
}

func runLogout(cfg config, store *credentials.Store) int {
	switch err := store.Remove(); {
	case errors.Is(err, credentials.ErrNotFound):
		fmt.Printf("Not logged in: no key is stored in %s.\n", store.Dir())
	case err != nil:
		fmt.Fprintln(os.Stderr, "dsh-acp logout:", err)
		return 1
	default:
		fmt.Printf("Logged out: removed %s.\n", store.Path())
	}
	if cfg.APIKey != "" {
		fmt.Println("Note: DSH_API_KEY or DEEPSEEK_API_KEY is set in this environment, and a daemon started with it still uses it.")
	}
	return 0
}

func runLogin(cfg config, store *credentials.Store) int {
	// The offered values: an explicit flag or variable, else what is
	// stored, else the default.
	offer := credentials.Credential{BaseURL: defaultBaseURL, Model: defaultModel}
	if old, err := store.Load(); err == nil {
		offer.BaseURL, offer.Model = old.BaseURL, old.Model
	}
	if cfg.BaseURLSet {
		offer.BaseURL = cfg.BaseURL
	}
	if cfg.ModelSet || offer.Model == "" {
		offer.Model = cfg.Model
	}
	// Ctrl-C ends the login with the terminal's echo restored.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	l := &credentials.Login{In: os.Stdin, Out: os.Stdout, Store: store, BaseURL: offer.BaseURL, Model: offer.Model}
	if err := l.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "dsh-acp login:", err)
		var unlisted *credentials.UnlistedModelError
		if errors.As(err, &unlisted) {
			fmt.Fprintln(os.Stderr, "Choose one of them with --model (or DSH_MODEL).")
		}
		if !errors.Is(err, credentials.ErrCancelled) {
			fmt.Fprintln(os.Stderr, "Nothing was stored.")
		}
		return 1
	}
	if cfg.APIKey != "" {
		fmt.Println("Note: DSH_API_KEY or DEEPSEEK_API_KEY is set in this environment; where it is set, it wins over the stored key.")
	}
	return 0
}

// newModelSource is the daemon's model source: the credential store in the
// config directory (none when it cannot be found, with a warning) and
// clients built from cfg's timeouts.
func newModelSource(cfg config, log *zap.Logger) *modelSource {
	store, err := credentialStore()
	if err != nil {
		log.Warn("no credential store", zap.Error(err))
	}
	return &modelSource{in: credentialInputs(cfg), store: store, build: func(c credentials.Credential) agent.ModelClient {
		return llm.New(llm.Config{BaseURL: c.BaseURL, APIKey: c.APIKey, Model: c.Model, IdleTimeout: cfg.ModelIdle, Logger: log})
	}}
}

// executable is this binary's absolute path ("" when unknown), for the
// older terminal-auth descriptor.
func executable() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	return p
}
