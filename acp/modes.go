package acp

import (
	"context"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/internal/permission"
)

// modeConfigID is the config option that mirrors the session mode.
const modeConfigID = "mode"

// Journal state keys for what permissions remember across session/load.
const (
	stateMode  = "permission.mode"
	stateAllow = "permission.allow"
)

var modeInfo = map[permission.Mode]struct{ name, description string }{
	permission.ModeAsk:      {"Ask", "Read-only and allowed commands run; anything else asks first"},
	permission.ModeAuto:     {"Auto", "Commands run without asking; deny rules still apply"},
	permission.ModeReadOnly: {"Read-only", "Only commands proven read-only run; everything else is denied"},
}

func modeState(current permission.Mode) *sdk.SessionModeState {
	st := &sdk.SessionModeState{CurrentModeId: sdk.SessionModeId(current)}
	for _, m := range permission.Modes() {
		info := modeInfo[m]
		st.AvailableModes = append(st.AvailableModes, sdk.SessionMode{
			Id: sdk.SessionModeId(m), Name: info.name, Description: sdk.Ptr(info.description),
		})
	}
	return st
}

// modeOptions is the mode config option.
func modeOptions(current permission.Mode) []sdk.SessionConfigOption {
	var opts sdk.SessionConfigSelectOptionsUngrouped
	for _, m := range permission.Modes() {
		info := modeInfo[m]
		opts = append(opts, sdk.SessionConfigSelectOption{
			Value: sdk.SessionConfigValueId(m), Name: info.name, Description: sdk.Ptr(info.description),
		})
	}
	o := sdk.NewSessionConfigOptionSelect(sdk.SessionConfigValueId(current), sdk.SessionConfigSelectOptions{Ungrouped: &opts})
	o.Select.Id = modeConfigID
	o.Select.Name = "Permission mode"
	o.Select.Category = sdk.Ptr(sdk.SessionConfigOptionCategoryMode)
	o.Select.Description = sdk.Ptr("When commands run without asking")
	return []sdk.SessionConfigOption{o}
}

// SetSessionMode switches the permission mode and announces it.
func (s *Server) SetSessionMode(ctx context.Context, p sdk.SetSessionModeRequest) (resp sdk.SetSessionModeResponse, err error) {
	defer guarded(s.log, "session/set_mode", &err)
	ss, err := s.session(p.SessionId)
	if err != nil {
		return resp, err
	}
	return resp, ss.setMode(string(p.ModeId))
}

// SetSessionConfigOption sets the mode config option (the same switch as
// session/set_mode), the sandbox option or the model option (as
// session/set_model) and returns every option.
func (s *Server) SetSessionConfigOption(ctx context.Context, p sdk.SetSessionConfigOptionRequest) (resp sdk.SetSessionConfigOptionResponse, err error) {
	defer guarded(s.log, "session/set_config_option", &err)
	v := p.ValueId
	if v == nil {
		return resp, invalidParams("config options %q, %q and %q take a value id", modeConfigID, sandboxConfigID, modelConfigID)
	}
	ss, err := s.session(v.SessionId)
	if err != nil {
		return resp, err
	}
	switch v.ConfigId {
	case modeConfigID:
		err = ss.setMode(string(v.Value))
	case modelConfigID:
		err = ss.setModel(string(v.Value))
	case sandboxConfigID:
		err = ss.setSandbox(string(v.Value))
	default:
		err = invalidParams("unknown config option %q", string(v.ConfigId))
	}
	if err != nil {
		return resp, err
	}
	return sdk.SetSessionConfigOptionResponse{ConfigOptions: ss.configOptions()}, nil
}

// setMode validates, records and announces a mode change.
func (ss *session) setMode(value string) error {
	mode, err := permission.ParseMode(value)
	if err != nil || value == "" {
		return invalidParams("unknown mode %q (want ask, auto or read-only)", value)
	}
	ss.perms.setMode(mode)
	if err := ss.journal.AppendState(stateMode, mode); err != nil {
		ss.log.Error("journal mode", zap.String("session", ss.id), zap.Error(err))
	}
	ss.send(sdk.SessionUpdate{CurrentModeUpdate: &sdk.SessionCurrentModeUpdate{CurrentModeId: sdk.SessionModeId(mode)}})
	ss.sendConfigOptions()
	ss.log.Info("mode", zap.String("session", ss.id), zap.String("mode", string(mode)))
	return nil
}
