package acp

import (
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/internal/configoption"
	"github.com/dsh-acp/dsh-acp/internal/slash"
)

// stateModel is the journal state key of a session's model.
const stateModel = "session.model"

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
	return configoption.Model(ss.agent.Model(), models), true
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
func (ss *session) modelsText() string {
	if ss.catalog == nil {
		return "No model is configured: set DSH_API_KEY (or DEEPSEEK_API_KEY), then restart the agent."
	}
	models, _ := ss.catalog.List()
	return slash.Models(ss.agent.Model(), models, ss.window)
}
