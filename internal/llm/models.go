package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
)

// errModelsTimeout is the cause of a ListModels request cut by its bound.
var errModelsTimeout = errors.New("the models request timed out")

// ListModels returns the models the provider offers (GET <base>/models), in
// the provider's order. The first success is cached for the client's life;
// a failure is not, so the next call asks again. A request lasts at most
// Config.ModelsTimeout; concurrent calls wait for one request.
//
// The error is ctx.Err() when ctx ended, otherwise an *Error: ErrEndpoint
// when the answer is not a models list (404, an HTML page), the other kinds
// as for Stream. ListModels never retries.
func (c *Client) ListModels(ctx context.Context) ([]Model, error) {
	if c.err != nil {
		return nil, c.err
	}
	select {
	case c.modelsLock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.modelsLock }()
	if c.models != nil {
		return slices.Clone(c.models), nil
	}
	models, err := c.fetchModels(ctx)
	if err != nil {
		return nil, err
	}
	c.models = models
	return slices.Clone(models), nil
}

func (c *Client) fetchModels(ctx context.Context) ([]Model, error) {
	tctx, cancel := context.WithTimeoutCause(ctx, c.modelsTimeout, errModelsTimeout)
	defer cancel()
	list, err := c.api.ListModels(tctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, c.modelsError(err, context.Cause(tctx) == errModelsTimeout)
	}
	models := make([]Model, 0, len(list.Models))
	for _, m := range list.Models {
		if m.ID != "" {
			models = append(models, Model{ID: m.ID, OwnedBy: m.OwnedBy})
		}
	}
	return models, nil
}

// modelsError classifies a failed models request.
func (c *Client) modelsError(err error, timedOut bool) *Error {
	e := c.classify(err, c.modelsURL)
	e.Attempts = 1
	switch {
	case timedOut:
		e.Kind, e.Status = ErrConnection, 0
		e.Detail = fmt.Sprintf("no models list within %s", c.modelsTimeout)
	case e.Status == http.StatusNotFound || e.Status == http.StatusMethodNotAllowed:
		e.Kind = ErrEndpoint // no models endpoint, whatever the body says
	case e.Kind == ErrMalformed:
		e.Kind = ErrEndpoint
		e.Detail = c.secret.scrub("the answer is not a models list: " + clip(err.Error()))
	}
	return e
}
