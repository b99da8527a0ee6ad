package acp

import (
	"fmt"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/internal/configoption"
	"github.com/dsh-acp/dsh-acp/internal/llm"
	"github.com/dsh-acp/dsh-acp/presentation"
)

// stateThinking is the journal state key of a session's thinking setting.
const stateThinking = "session.thinking"

// thinkingSetting is the thinking option: offered with a model, and no
// longer once the provider refused the setting for the session's model
// (the client then sends it no more).
func thinkingSetting(ss *session) (sdk.SessionConfigOption, bool) {
	if ss.catalog == nil || ss.models.ThinkingRefused(ss.agent.Model()) {
		return sdk.SessionConfigOption{}, false
	}
	return configoption.Thinking(ss.agent.Thinking()), true
}

// setThinking validates and applies a thinking setting.
func setThinking(ss *session, value string) (string, error) {
	t, err := llm.ParseThinking(value)
	if err != nil {
		return "", invalidParams("%v", err)
	}
	if ss.catalog == nil {
		return "", invalidParams("no model is configured, so there is no thinking to set")
	}
	if ss.models.ThinkingRefused(ss.agent.Model()) {
		return "", invalidParams("the model provider does not take the thinking setting for %q; the provider's default applies", ss.agent.Model())
	}
	ss.agent.SetThinking(t)
	return t.String(), nil
}

// restoreThinking applies the thinking setting a journal recorded.
func restoreThinking(ss *session, value string) {
	if t, err := llm.ParseThinking(value); err == nil {
		ss.agent.SetThinking(t)
	}
}

// thinkingText is /thinking's answer without an argument.
func (ss *session) thinkingText() string {
	if ss.catalog == nil {
		return "No model is configured: set DSH_API_KEY (or DEEPSEEK_API_KEY), then restart the agent.\n\n"
	}
	if ss.models.ThinkingRefused(ss.agent.Model()) {
		return "The model provider does not take the thinking setting for " + ss.agent.Model() + ": its default applies.\n\n"
	}
	return "Thinking: " + ss.agent.Thinking().Label() + ". Switch with /thinking " + thinkingChoices() + ".\n\n"
}

func thinkingChoices() string {
	s := ""
	for i, l := range llm.ThinkingLevels() {
		if i > 0 {
			s += " | "
		}
		s += l.String()
	}
	return s
}

// reportModel tells a new session, once the provider's model list is in,
// that the configured model is not among the models listed (naming those
// it lists and the fix), so the user learns it before the first prompt
// fails. It says nothing while the session asks for another model (the
// client's choice) or once the session closed.
func (ss *session) reportModel() {
	if ss.catalog == nil {
		return
	}
	<-ss.catalog.Done()
	problem := ss.catalog.Problem()
	ss.mu.Lock()
	closed := ss.closed
	ss.mu.Unlock()
	if problem == "" || closed || ss.catalog.Configured() != ss.agent.Model() {
		return
	}
	ss.present.Notice(presentation.NewNotice(presentation.SeverityWarning,
		fmt.Sprintf("The model %q is not listed by the provider", ss.agent.Model()), problem))
}

// thinkingMayBeGone sends the config options once the provider refused the
// thinking setting for the session's model (during the turn that just
// ended), so the option the provider does not take is no longer offered.
func (ss *session) thinkingMayBeGone() {
	if ss.models.ThinkingRefused(ss.agent.Model()) && !ss.thinkingGone.Swap(true) {
		ss.sendConfigOptions()
	}
}
