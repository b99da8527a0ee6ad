package llm

import (
	"context"
	"errors"
	"sync"

	"go.uber.org/zap"
)

// Streamer is a streaming chat client (*Client, or any other).
type Streamer interface {
	Stream(ctx context.Context, req Request, onDelta func(Delta)) (Response, error)
}

// ErrNoModel ends a model request made while no client is in force (the
// credential was removed).
var ErrNoModel = errors.New("no API key: the credential was removed (log in again)")

// InForce is the model client in force: the one every session streams
// through, so all sessions follow a login or logout at once. It is fixed,
// or looked up again on Refresh (the daemon calls it before each prompt
// that needs the model), so a key stored by `dsh-acp login` while the
// daemon runs is picked up without a restart. Safe for concurrent use.
type InForce struct {
	lookup func() (Streamer, error) // nil: fixed
	log    *zap.Logger

	mu      sync.Mutex
	current Streamer
	why     error // why current is nil, when lookup said
}

// NewInForce starts with first (nil: none); lookup, when set, answers
// Refresh: the client for the credential in force now, nil with a nil error
// when there is none, nil with an error saying why a stored credential is
// not usable (the error must not hold the key).
func NewInForce(first Streamer, lookup func() (Streamer, error), log *zap.Logger) *InForce {
	if c, ok := first.(*Client); ok && c == nil {
		first = nil // a typed nil is as good as none
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &InForce{lookup: lookup, log: log, current: first}
}

// Refresh looks the client up again (when there is a lookup) and returns
// the client in force, nil when there is none.
func (m *InForce) Refresh() Streamer {
	if m.lookup == nil {
		return m.Current()
	}
	c, err := m.lookup()
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

// Current is the client in force, nil when there is none.
func (m *InForce) Current() Streamer {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.current
}

// Why says why there is no client, when the lookup said.
func (m *InForce) Why() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.why
}

// Stream streams through the client in force (ErrNoModel without one).
func (m *InForce) Stream(ctx context.Context, req Request, onDelta func(Delta)) (Response, error) {
	c := m.Current()
	if c == nil {
		return Response{}, ErrNoModel
	}
	return c.Stream(ctx, req, onDelta)
}

// ListModels lists the provider's models through the client in force.
func (m *InForce) ListModels(ctx context.Context) ([]Model, error) {
	lister, ok := m.Current().(interface {
		ListModels(context.Context) ([]Model, error)
	})
	if !ok {
		return nil, errors.New("no model client that lists models")
	}
	return lister.ListModels(ctx)
}

// ThinkingRefused reports whether the provider of the client in force
// refused the thinking setting for model (Client.ThinkingRefused); false
// without a client or for one that does not say.
func (m *InForce) ThinkingRefused(model string) bool {
	c, ok := m.Current().(interface{ ThinkingRefused(string) bool })
	return ok && c.ThinkingRefused(model)
}
