package configoption

import (
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/internal/llm"
	"github.com/dsh-acp/dsh-acp/internal/permission"
)

// values are an option's id, current value and offered values.
func values(t *testing.T, o sdk.SessionConfigOption) (id, current, offered string) {
	t.Helper()
	if o.Select == nil || o.Select.Options.Ungrouped == nil {
		t.Fatalf("not an ungrouped select: %+v", o)
	}
	var v []string
	for _, opt := range *o.Select.Options.Ungrouped {
		v = append(v, string(opt.Value))
	}
	return string(o.Select.Id), string(o.Select.CurrentValue), strings.Join(v, ",")
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		o                    sdk.SessionConfigOption
		id, current, offered string
		category             sdk.SessionConfigOptionCategory
	}{
		{Mode(permission.ModeAuto), ModeID, "auto", "ask,auto,read-only", sdk.SessionConfigOptionCategoryMode},
		{Model("b", []string{"a", "b"}), ModelID, "b", "a,b", sdk.SessionConfigOptionCategoryModel},
		// A model the provider does not list is still offered, first.
		{Model("mine", []string{"a"}), ModelID, "mine", "mine,a", sdk.SessionConfigOptionCategoryModel},
		{Thinking(llm.ThinkingLevels()[0]), ThinkingID, llm.ThinkingLevels()[0].String(), "", sdk.SessionConfigOptionCategoryThoughtLevel},
	} {
		id, current, offered := values(t, tc.o)
		if tc.offered == "" { // every thinking level
			var all []string
			for _, l := range llm.ThinkingLevels() {
				all = append(all, l.String())
			}
			tc.offered = strings.Join(all, ",")
		}
		if id != tc.id || current != tc.current || offered != tc.offered || tc.o.Select.Category == nil || *tc.o.Select.Category != tc.category {
			t.Errorf("option %s = current %s, offered %s, category %v; want %s %s %s %s", id, current, offered, tc.o.Select.Category, tc.id, tc.current, tc.offered, tc.category)
		}
	}
	st := ModeState(permission.ModeReadOnly)
	if st.CurrentModeId != "read-only" || len(st.AvailableModes) != len(permission.Modes()) {
		t.Errorf("mode state %+v", st)
	}
	for _, m := range st.AvailableModes {
		if m.Description == nil || *m.Description != DescribeMode(permission.Mode(m.Id)) || *m.Description == "" {
			t.Errorf("mode %s without its description", m.Id)
		}
	}
}
