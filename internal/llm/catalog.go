package llm

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Lister is a model client that can list the provider's models
// (*Client, *InForce).
type Lister interface {
	ListModels(ctx context.Context) ([]Model, error)
}

// Catalog is the provider's model list, fetched once per daemon in
// the background: until the fetch ends — and for good if it fails — the
// list is the configured model alone. The configured model is always in
// the list. Safe for concurrent use.
type Catalog struct {
	configured string
	done       chan struct{} // closed when the fetch ended
	start      func()        // starts the fetch, once (see NewCatalog)

	mu      sync.Mutex
	models  []string
	version int        // 1 once the fetch ended
	listed  bool       // the provider gave its list
	check   ModelCheck // what the list says of the configured model
}

// NewCatalog fetches the models of client (none when it cannot list
// them) once Start is called — the daemon calls it after its first reply
// is written, so the request is not made on the way to it — or at the
// latest when Wait is, and calls ready, on the fetching goroutine, once
// the list is final. configured is the model sessions start with.
func NewCatalog(ctx context.Context, client any, configured string, log *zap.Logger, ready func()) *Catalog {
	c := &Catalog{configured: configured, done: make(chan struct{}), models: []string{configured}, start: func() {}}
	lister, ok := client.(Lister)
	if !ok || configured == "" {
		c.version = 1
		close(c.done)
		return c
	}
	c.start = sync.OnceFunc(func() { go c.fetch(ctx, lister, log, ready) })
	return c
}

// fetch asks lister for the models, then ends the catalog's wait.
func (c *Catalog) fetch(ctx context.Context, lister Lister, log *zap.Logger, ready func()) {
	start := time.Now()
	models, err := lister.ListModels(ctx)
	c.mu.Lock()
	if err == nil {
		c.models, c.listed = withModel(models, c.configured), true
		c.check = CheckModel(models, c.configured)
	}
	c.version = 1
	c.mu.Unlock()
	close(c.done)
	if err != nil {
		log.Info("model list unavailable; offering the configured model only", zap.Error(err))
	} else {
		log.Info("model list", zap.Int("models", len(models)), zap.Duration("took", time.Since(start)))
	}
	ready()
}

// withModel is the ids of models, in the provider's order, with configured
// first when the provider does not list it.
func withModel(models []Model, configured string) []string {
	ids := make([]string, 0, len(models)+1)
	for _, m := range models {
		if !slices.Contains(ids, m.ID) {
			ids = append(ids, m.ID)
		}
	}
	if !slices.Contains(ids, configured) {
		ids = append([]string{configured}, ids...)
	}
	return ids
}

// Wait waits until the fetch ended, at most d (or until ctx ends).
func (c *Catalog) Wait(ctx context.Context, d time.Duration) {
	c.start()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
	case <-ctx.Done():
	}
}

// List is the models known now and the catalog's version.
func (c *Catalog) List() ([]string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.models), c.version
}

// Accepts reports whether id may be chosen: one of the provider's models,
// or, when the provider gave no list, any id (the provider then judges it).
func (c *Catalog) Accepts(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id == "" || strings.ContainsAny(id, " \t\r\n") {
		return false
	}
	return slices.Contains(c.models, id) || (!c.listed && c.version > 0)
}

// Configured is the model sessions start with.
func (c *Catalog) Configured() string { return c.configured }

// Done is closed once the fetch ended (see Start).
func (c *Catalog) Done() <-chan struct{} { return c.done }

// Problem says, once the fetch ended, that the provider's list does not
// name the configured model, with the models it does name and the fix
// (ModelCheck.Problem); "" while the fetch runs, when it failed, when the
// provider listed nothing, and when the model is listed.
func (c *Catalog) Problem() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.listed || len(c.check.Models) == 0 {
		return ""
	}
	return c.check.Problem()
}

// Start starts the fetch (once); Wait starts it too.
func (c *Catalog) Start() { c.start() }
