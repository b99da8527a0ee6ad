package replay

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// A journal damaged in any way (torn records, NULs, garbage, bad JSON of
// every shape) never stops a read, never panics, and a good record after
// the damage is still read.
func FuzzScan(f *testing.F) {
	good := `{"v":1,"seq":99,"t":"2026-01-02T03:04:05Z","type":"user_prompt","text":"after the damage"}`
	for _, seed := range []string{
		`{"v":1,"seq":1,"t":"2026-01-02T03:04:05Z","type":"session","id":"s","cwd":"/tmp","created":"2026-01-02T03:04:05Z","daemonVersion":"1"}`,
		`{"v":1,"seq":2,"type":"tool_call","id":"c","name":"bash","args`, "\x00\x00\x00", `{"v":9,"type":"user_prompt"}`,
		`{"v":1,"seq":3,"type":"tool_result","id":"c","result":{"exitCode":"x"}}`, `{"v":1,"type":"state","key":""}`,
		`[1,2,3]`, `null`, `{"v":1,"seq":4,"type":"assistant","toolCalls":[{"id":1}]}`,
		`{"v":2,"seq":5,"type":"file_changes","changes":{"id":"changes-c","dir":"/w","files":[{"path":"a","op":"modified","old":"x","line":2}],"undoes":["u"]}}`,
		`{"v":2,"seq":6,"type":"file_changes","changes":{"files":"x"}}`, `{"v":2,"seq":7,"type":"file_changes"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, damage []byte) {
		input := string(damage) + "\n" + good + "\n"
		var last event.Event
		warnings, err := Scan(strings.NewReader(input), func(r Record) error {
			if r.Event != nil {
				last = r.Event
			}
			return nil
		})
		if err != nil {
			t.Fatalf("Scan stopped: %v", err)
		}
		if p, ok := last.(event.UserPrompt); !ok || p.Text != "after the damage" {
			t.Fatalf("the good record after the damage was lost (last %#v, warnings %q)", last, warnings)
		}
		if len(warnings) > maxWarnings+1 {
			t.Fatalf("%d warnings: unbounded", len(warnings))
		}
		if bytes.ContainsRune(damage, 0) && len(warnings) == 0 {
			t.Fatalf("NULs skipped without a warning")
		}
	})
}
