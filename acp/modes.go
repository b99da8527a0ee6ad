package acp

import (
	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/internal/permission"
)

// modeConfigID is the config option that mirrors the session mode.
const modeConfigID = "mode"

// stateMode is the journal state key of the session's mode.
const stateMode = "permission.mode"

// restoreMode applies a journaled mode.
func restoreMode(ss *session, value string) {
	if m, err := permission.ParseMode(value); err == nil {
		ss.policy.SetMode(m)
	}
}

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

// modeOption is the mode setting's config option.
func modeOption(ss *session) (sdk.SessionConfigOption, bool) {
	current := ss.policy.Mode()
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
	return o, true
}

// setMode validates and applies a mode.
func setMode(ss *session, value string) (string, error) {
	mode, err := permission.ParseMode(value)
	if err != nil || value == "" {
		return "", invalidParams("unknown mode %q (want ask, auto or read-only)", value)
	}
	ss.policy.SetMode(mode)
	return string(mode), nil
}

// announceMode sends current_mode_update.
func announceMode(ss *session) {
	ss.send(sdk.SessionUpdate{CurrentModeUpdate: &sdk.SessionCurrentModeUpdate{CurrentModeId: sdk.SessionModeId(ss.policy.Mode())}})
}
