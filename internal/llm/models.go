package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
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

// ModelCheck is what the provider's model list says of a model (CheckModel).
type ModelCheck struct {
	// Model is the model checked.
	Model string
	// Listed reports that the provider listed at least one model; without a
	// list there is nothing to judge by, and Served is true.
	Listed bool
	// Served reports that the list names Model exactly (or that there is
	// no list).
	Served bool
	// Models are the ids the provider lists, in its order, once each.
	Models []string
	// Suggest is a listed id that differs from Model only in case or
	// surrounding spaces, "" when none does.
	Suggest string
}

// CheckModel says whether model is among models, the provider's list
// (ListModels), and names the ids listed. It is a pure function of its
// arguments.
func CheckModel(models []Model, model string) ModelCheck {
	c := ModelCheck{Model: model, Models: make([]string, 0, len(models))}
	for _, m := range models {
		if m.ID == "" || slices.Contains(c.Models, m.ID) {
			continue
		}
		c.Models = append(c.Models, m.ID)
		switch {
		case m.ID == model:
			c.Served = true
		case c.Suggest == "" && strings.EqualFold(m.ID, strings.TrimSpace(model)):
			c.Suggest = m.ID
		}
	}
	c.Listed = len(c.Models) > 0
	c.Served = c.Served || !c.Listed
	return c
}

// Problem is what to tell the user before the first prompt when the model
// is not listed — that requests for it will likely fail, the models the
// provider lists, and the fix — or "" when it is served. (A provider may
// still answer for an unlisted alias; the sentence says "likely".)
func (c ModelCheck) Problem() string {
	if c.Served {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The model %q is not among the models the provider lists, so requests for it will likely fail. ", c.Model)
	if c.Suggest != "" {
		fmt.Fprintf(&b, "Did you mean %q? ", c.Suggest)
	}
	fmt.Fprintf(&b, "The provider lists: %s. Choose one with /model (or the model selector), or start dsh-acp with --model or DSH_MODEL set to one of them.",
		strings.Join(c.Models, ", "))
	return b.String()
}
