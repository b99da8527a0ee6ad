package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/internal/llm"
)

// modelConfigID is the config option that chooses the session's model.
const modelConfigID = "model"

// stateModel is the journal state key of a session's model.
const stateModel = "session.model"

// modelLister is a model client that can list the provider's models
// (*llm.Client).
type modelLister interface {
	ListModels(ctx context.Context) ([]llm.Model, error)
}

// modelCatalog is the provider's model list, fetched once per daemon in
// the background: until the fetch ends — and for good if it fails — the
// list is the configured model alone. The configured model is always in
// the list. Safe for concurrent use.
type modelCatalog struct {
	configured string
	done       chan struct{} // closed when the fetch ended
	start      func()        // starts the fetch, once (see newModelCatalog)

	mu      sync.Mutex
	models  []string
	version int  // 1 once the fetch ended
	listed  bool // the provider gave its list
}

// newModelCatalog fetches the models of client (none when it cannot list
// them) once start is called — the daemon calls it after its first reply
// is written, so the request is not made on the way to it — or at the
// latest when wait is, and calls ready, on the fetching goroutine, once
// the list is final. configured is the model sessions start with.
func newModelCatalog(ctx context.Context, client any, configured string, log *zap.Logger, ready func()) *modelCatalog {
	c := &modelCatalog{configured: configured, done: make(chan struct{}), models: []string{configured}, start: func() {}}
	lister, ok := client.(modelLister)
	if !ok || configured == "" {
		c.version = 1
		close(c.done)
		return c
	}
	c.start = sync.OnceFunc(func() { go c.fetch(ctx, lister, log, ready) })
	return c
}

// fetch asks lister for the models, then ends the catalog's wait.
func (c *modelCatalog) fetch(ctx context.Context, lister modelLister, log *zap.Logger, ready func()) {
	start := time.Now()
	models, err := lister.ListModels(ctx)
	c.mu.Lock()
	if err == nil {
		c.models, c.listed = withModel(models, c.configured), true
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
func withModel(models []llm.Model, configured string) []string {
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

// wait waits until the fetch ended, at most d (or until ctx ends).
func (c *modelCatalog) wait(ctx context.Context, d time.Duration) {
	c.start()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
	case <-ctx.Done():
	}
}

// list is the models known now and the catalog's version.
func (c *modelCatalog) list() ([]string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.models), c.version
}

// accepts reports whether id may be chosen: one of the provider's models,
// or, when the provider gave no list, any id (the provider then judges it).
func (c *modelCatalog) accepts(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id == "" || strings.ContainsAny(id, " \t\r\n") {
		return false
	}
	return slices.Contains(c.models, id) || (!c.listed && c.version > 0)
}

// modelOption is the model config option, with current always offered.
func modelOption(current string, models []string) sdk.SessionConfigOption {
	if !slices.Contains(models, current) {
		models = append([]string{current}, models...)
	}
	opts := make(sdk.SessionConfigSelectOptionsUngrouped, 0, len(models))
	for _, id := range models {
		opts = append(opts, sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(id), Name: id})
	}
	o := sdk.NewSessionConfigOptionSelect(sdk.SessionConfigValueId(current), sdk.SessionConfigSelectOptions{Ungrouped: &opts})
	o.Select.Id = modelConfigID
	o.Select.Name = "Model"
	o.Select.Category = sdk.Ptr(sdk.SessionConfigOptionCategoryModel)
	o.Select.Description = sdk.Ptr("The model this session asks; the context window follows it")
	return o
}

// configOptions are the session's config options: the permission mode,
// the sandbox level, and the model when one is configured. It records
// which catalog version the client is about to get.
func (ss *session) configOptions() []sdk.SessionConfigOption {
	opts := append(modeOptions(ss.perms.currentMode()), sandboxOption(ss.agent.Sandbox(), ss.sandboxes.levels()))
	if ss.catalog == nil {
		return opts
	}
	models, version := ss.catalog.list()
	ss.mu.Lock()
	ss.optionsVersion = version
	ss.mu.Unlock()
	return append(opts, modelOption(ss.agent.Model(), models))
}

// sendConfigOptions announces the session's config options.
func (ss *session) sendConfigOptions() {
	ss.send(sdk.SessionUpdate{ConfigOptionUpdate: &sdk.SessionConfigOptionUpdate{ConfigOptions: ss.configOptions()}})
}

// setModel validates, records and announces a model change.
func (ss *session) setModel(id string) error {
	id = strings.TrimSpace(id)
	if ss.catalog == nil {
		return invalidParams("no model is configured, so there is none to choose")
	}
	if !ss.catalog.accepts(id) && id != ss.agent.Model() {
		models, _ := ss.catalog.list()
		return invalidParams("unknown model %q (the provider offers: %s)", id, strings.Join(models, ", "))
	}
	ss.agent.SetModel(id)
	if err := ss.journal.AppendState(stateModel, id); err != nil {
		ss.log.Error("journal model", zap.String("session", ss.id), zap.Error(err))
	}
	ss.sendConfigOptions()
	ss.log.Info("model", zap.String("session", ss.id), zap.String("model", id))
	return nil
}

// restoreModel sets the model a journal recorded, when it still names one.
func (ss *session) restoreModel(state map[string]json.RawMessage) {
	raw, ok := state[stateModel]
	if !ok || ss.catalog == nil {
		return
	}
	var id string
	if err := json.Unmarshal(raw, &id); err != nil || id == "" {
		ss.log.Warn("journal model unreadable", zap.String("session", ss.id))
		return
	}
	ss.agent.SetModel(id)
}

// announceModels sends the complete model list to the sessions whose
// client got a shorter one (the fetch ended after their reply).
// It may run before Serve has stored the catalog: it reads each session's.
func (s *Server) announceModels() {
	s.mu.Lock()
	sessions := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		sessions = append(sessions, ss)
	}
	s.mu.Unlock()
	for _, ss := range sessions {
		if ss.catalog == nil {
			continue
		}
		_, version := ss.catalog.list()
		ss.mu.Lock()
		stale := ss.announced && ss.optionsVersion != version
		ss.mu.Unlock()
		if stale {
			ss.sendConfigOptions()
		}
	}
}

// UnstableSetSessionModel is session/set_model: the same switch as the
// model config option.
func (s *Server) UnstableSetSessionModel(ctx context.Context, p sdk.UnstableSetSessionModelRequest) (resp sdk.UnstableSetSessionModelResponse, err error) {
	defer guarded(s.log, "session/set_model", &err)
	ss, err := s.session(p.SessionId)
	if err != nil {
		return resp, err
	}
	return resp, ss.setModel(string(p.ModelId))
}

// modelsText is /model's answer without an argument.
func (ss *session) modelsText(window func(string) int) string {
	if ss.catalog == nil {
		return "No model is configured: set DSH_API_KEY (or DEEPSEEK_API_KEY), then restart the agent."
	}
	models, _ := ss.catalog.list()
	current := ss.agent.Model()
	var b strings.Builder
	fmt.Fprintf(&b, "Model: %s (context window %s tokens). Switch with /model ID; the provider offers:\n", current, groupThousands(window(current)))
	for _, id := range models {
		mark := " "
		if id == current {
			mark = "*"
		}
		fmt.Fprintf(&b, "%s %s\n", mark, id)
	}
	return b.String() + "\n"
}
