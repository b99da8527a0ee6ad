package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/internal/configoption"
	"github.com/dsh-acp/dsh-acp/internal/sandboxlevel"
)

// A session setting is one row of settings: its config option (what
// session/new, session/load and config_option_update offer), how a value
// is set (session/set_config_option, and the methods and slash commands
// that are the same switch), the journal key it is recorded under and how
// a journaled value is restored on session/load. Adding a setting is
// adding a row — issue 24's `thinking` goes right after `model`, with the
// agent's setter for the reasoning parameters the model client sends.
type setting struct {
	id  string // the config option's id
	key string // the journal state key
	// option is the config option as offered now; false: not offered.
	option func(ss *session) (sdk.SessionConfigOption, bool)
	// set validates value and applies it, returning the value to journal.
	set func(ss *session, value string) (string, error)
	// restore applies a journaled value (nil: restored elsewhere).
	restore func(ss *session, value string)
	// changed, when set, announces a change beyond config_option_update.
	changed func(ss *session)
}

// settings are the session settings, in the order they are offered.
var settings = []setting{
	{id: configoption.ModeID, key: stateMode, option: modeOption, set: setMode, restore: restoreMode, changed: announceMode},
	// The level is restored by startSandbox, which also picks a new
	// session's level.
	{id: sandboxlevel.ConfigID, key: sandboxlevel.StateKey, option: sandboxSetting, set: setSandbox},
	{id: configoption.ModelID, key: stateModel, option: modelSetting, set: setModel, restore: restoreModel},
	{id: configoption.ThinkingID, key: stateThinking, option: thinkingSetting, set: setThinking, restore: restoreThinking},
}

func findSetting(id string) (setting, bool) {
	for _, s := range settings {
		if s.id == id {
			return s, true
		}
	}
	return setting{}, false
}

// configOptions are the session's config options, one per setting offered.
func (ss *session) configOptions() []sdk.SessionConfigOption {
	opts := make([]sdk.SessionConfigOption, 0, len(settings))
	for _, s := range settings {
		if o, ok := s.option(ss); ok {
			opts = append(opts, o)
		}
	}
	return opts
}

// sendConfigOptions announces the session's config options.
func (ss *session) sendConfigOptions() {
	ss.send(sdk.SessionUpdate{ConfigOptionUpdate: &sdk.SessionConfigOptionUpdate{ConfigOptions: ss.configOptions()}})
}

// setSetting validates, applies, journals and announces a setting's new
// value.
func (ss *session) setSetting(id, value string) error {
	s, ok := findSetting(id)
	if !ok {
		return invalidParams("unknown config option %q", id)
	}
	v, err := s.set(ss, value)
	if err != nil {
		return err
	}
	if err := ss.journal.AppendState(s.key, v); err != nil {
		ss.log.Error("journal setting", zap.String("session", ss.id), zap.String("setting", id), zap.Error(err))
	}
	if s.changed != nil {
		s.changed(ss)
	}
	ss.sendConfigOptions()
	ss.log.Info("setting", zap.String("session", ss.id), zap.String("setting", id), zap.String("value", v))
	return nil
}

// restoreSettings applies the settings a reopened session's journal
// recorded.
func (ss *session) restoreSettings(state map[string]json.RawMessage) {
	for _, s := range settings {
		raw, ok := state[s.key]
		if !ok || s.restore == nil {
			continue
		}
		var v string
		if err := json.Unmarshal(raw, &v); err != nil || v == "" {
			ss.log.Warn("journal setting unreadable", zap.String("session", ss.id), zap.String("setting", s.id))
			continue
		}
		s.restore(ss, v)
	}
}

// SetSessionConfigOption sets one setting and returns every option.
func (s *Server) SetSessionConfigOption(ctx context.Context, p sdk.SetSessionConfigOptionRequest) (resp sdk.SetSessionConfigOptionResponse, err error) {
	v := p.ValueId
	if v == nil {
		ids := make([]string, len(settings))
		for i, s := range settings {
			ids[i] = fmt.Sprintf("%q", s.id)
		}
		return resp, invalidParams("config options %s take a value id", strings.Join(ids, ", "))
	}
	ss, err := s.session(v.SessionId)
	if err != nil {
		return resp, err
	}
	if err := ss.setSetting(string(v.ConfigId), string(v.Value)); err != nil {
		return resp, err
	}
	return sdk.SetSessionConfigOptionResponse{ConfigOptions: ss.configOptions()}, nil
}

// SetSessionMode is session/set_mode: the mode setting.
func (s *Server) SetSessionMode(ctx context.Context, p sdk.SetSessionModeRequest) (resp sdk.SetSessionModeResponse, err error) {
	ss, err := s.session(p.SessionId)
	if err != nil {
		return resp, err
	}
	return resp, ss.setSetting(configoption.ModeID, string(p.ModeId))
}

// UnstableSetSessionModel is session/set_model: the model setting.
func (s *Server) UnstableSetSessionModel(ctx context.Context, p sdk.UnstableSetSessionModelRequest) (resp sdk.UnstableSetSessionModelResponse, err error) {
	ss, err := s.session(p.SessionId)
	if err != nil {
		return resp, err
	}
	return resp, ss.setSetting(configoption.ModelID, string(p.ModelId))
}
