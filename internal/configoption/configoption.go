// Package configoption is the session settings as the client shows them:
// ACP's session modes and the select config options of the permission
// mode, the model and the thinking setting (the sandbox level's is
// internal/sandboxlevel's Option), with their names and descriptions.
//
// Contract: each builder is a pure function of the current value and
// what is offered; the current value is always among the options (a
// model the provider does not list is offered first), so a client never
// shows a choice that is not in force. The option ids are the ids
// session/set_config_option takes (acp's settings table).
//
// # Known limits
//
// The names and descriptions are English only; the thinking option offers
// every level of llm.ThinkingLevels whatever the model (acp stops offering
// it once the provider refused the setting for the session's model).
package configoption

import (
	"slices"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/internal/llm"
	"github.com/dsh-acp/dsh-acp/internal/permission"
)

// The config option ids.
const (
	ModeID     = "mode"     // mirrors the session mode
	ModelID    = "model"    // the session's model
	ThinkingID = "thinking" // how much the model thinks (Zed's thinking selector)
)

var modeInfo = map[permission.Mode]struct{ name, description string }{
	permission.ModeAsk:      {"Ask", "Read-only and allowed commands run; anything else asks first"},
	permission.ModeAuto:     {"Auto", "Commands run without asking; deny rules still apply"},
	permission.ModeReadOnly: {"Read-only", "Only commands proven read-only run; everything else is denied"},
}

// DescribeMode says what mode m lets run.
func DescribeMode(m permission.Mode) string { return modeInfo[m].description }

// ModeState is the session modes a session/new, load or resume reply
// carries.
func ModeState(current permission.Mode) *sdk.SessionModeState {
	st := &sdk.SessionModeState{CurrentModeId: sdk.SessionModeId(current)}
	for _, m := range permission.Modes() {
		info := modeInfo[m]
		st.AvailableModes = append(st.AvailableModes, sdk.SessionMode{
			Id: sdk.SessionModeId(m), Name: info.name, Description: sdk.Ptr(info.description),
		})
	}
	return st
}

// Mode is the permission mode's config option.
func Mode(current permission.Mode) sdk.SessionConfigOption {
	var opts sdk.SessionConfigSelectOptionsUngrouped
	for _, m := range permission.Modes() {
		info := modeInfo[m]
		opts = append(opts, sdk.SessionConfigSelectOption{
			Value: sdk.SessionConfigValueId(m), Name: info.name, Description: sdk.Ptr(info.description),
		})
	}
	return selectOption(string(current), opts, ModeID, "Permission mode", sdk.SessionConfigOptionCategoryMode,
		"When commands run without asking")
}

// Model is the model's config option, with current always offered.
func Model(current string, models []string) sdk.SessionConfigOption {
	if !slices.Contains(models, current) {
		models = append([]string{current}, models...)
	}
	opts := make(sdk.SessionConfigSelectOptionsUngrouped, 0, len(models))
	for _, id := range models {
		opts = append(opts, sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(id), Name: id})
	}
	return selectOption(current, opts, ModelID, "Model", sdk.SessionConfigOptionCategoryModel,
		"The model this session asks; the context window follows it")
}

// Thinking is the thinking setting's config option (category
// thought_level).
func Thinking(current llm.Thinking) sdk.SessionConfigOption {
	levels := llm.ThinkingLevels()
	opts := make(sdk.SessionConfigSelectOptionsUngrouped, 0, len(levels))
	for _, l := range levels {
		opts = append(opts, sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(l.String()), Name: l.Label()})
	}
	return selectOption(current.String(), opts, ThinkingID, "Thinking", sdk.SessionConfigOptionCategoryThoughtLevel,
		"How much the model reasons before it answers; default is the provider's")
}

func selectOption(current string, opts sdk.SessionConfigSelectOptionsUngrouped, id, name string, category sdk.SessionConfigOptionCategory, description string) sdk.SessionConfigOption {
	o := sdk.NewSessionConfigOptionSelect(sdk.SessionConfigValueId(current), sdk.SessionConfigSelectOptions{Ungrouped: &opts})
	o.Select.Id = sdk.SessionConfigId(id)
	o.Select.Name = name
	o.Select.Category = sdk.Ptr(category)
	o.Select.Description = sdk.Ptr(description)
	return o
}
