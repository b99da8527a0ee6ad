package acp

import (
	"fmt"
	"slices"
	"strings"

	sdk "github.com/coder/acp-go-sdk"
)

// modelConfigID is the config option that chooses the session's model.
const modelConfigID = "model"

// stateModel is the journal state key of a session's model.
const stateModel = "session.model"

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

// modelSetting is the model setting's config option, offered when a model
// is configured. It records which catalog version the client is about to
// get.
func modelSetting(ss *session) (sdk.SessionConfigOption, bool) {
	if ss.catalog == nil {
		return sdk.SessionConfigOption{}, false
	}
	models, version := ss.catalog.List()
	ss.mu.Lock()
	ss.optionsVersion = version
	ss.mu.Unlock()
	return modelOption(ss.agent.Model(), models), true
}

// setModel validates and applies a model.
func setModel(ss *session, id string) (string, error) {
	id = strings.TrimSpace(id)
	if ss.catalog == nil {
		return "", invalidParams("no model is configured, so there is none to choose")
	}
	if !ss.catalog.Accepts(id) && id != ss.agent.Model() {
		models, _ := ss.catalog.List()
		return "", invalidParams("unknown model %q (the provider offers: %s)", id, strings.Join(models, ", "))
	}
	ss.agent.SetModel(id)
	return id, nil
}

// restoreModel sets the model a journal recorded.
func restoreModel(ss *session, id string) {
	if ss.catalog != nil {
		ss.agent.SetModel(id)
	}
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
		_, version := ss.catalog.List()
		ss.mu.Lock()
		stale := ss.announced && ss.optionsVersion != version
		ss.mu.Unlock()
		if stale {
			ss.sendConfigOptions()
		}
	}
}

// modelsText is /model's answer without an argument.
func (ss *session) modelsText(window func(string) int) string {
	if ss.catalog == nil {
		return "No model is configured: set DSH_API_KEY (or DEEPSEEK_API_KEY), then restart the agent."
	}
	models, _ := ss.catalog.List()
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
