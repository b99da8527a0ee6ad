package acp

import (
	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/internal/configoption"
	"github.com/dsh-acp/dsh-acp/internal/permission"
)

// stateMode is the journal state key of the session's mode.
const stateMode = "permission.mode"

// restoreMode applies a journaled mode.
func restoreMode(ss *session, value string) {
	if m, err := permission.ParseMode(value); err == nil {
		ss.policy.SetMode(m)
	}
}

// modeOption is the mode setting's config option.
func modeOption(ss *session) (sdk.SessionConfigOption, bool) {
	return configoption.Mode(ss.policy.Mode()), true
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
