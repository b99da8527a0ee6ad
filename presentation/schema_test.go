package presentation_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/presentation"
)

// schemaNode is the subset of JSON Schema testdata/schema_extensions.json
// uses.
type schemaNode struct {
	Required   []string              `json:"required"`
	Properties map[string]schemaNode `json:"properties"`
	Type       string                `json:"type"`
	Enum       []string              `json:"enum"`
	Const      *string               `json:"const"`
	Items      *schemaNode           `json:"items"`
}

// conform reports where v breaks n.
func conform(t *testing.T, at string, n schemaNode, v any) {
	t.Helper()
	if n.Const != nil && v != *n.Const {
		t.Errorf("%s = %v, want %q", at, v, *n.Const)
	}
	switch n.Type {
	case "string":
		s, ok := v.(string)
		if !ok {
			t.Errorf("%s = %v, want a string", at, v)
		} else if len(n.Enum) > 0 && !slices.Contains(n.Enum, s) {
			t.Errorf("%s = %q, not one of %v", at, s, n.Enum)
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			t.Errorf("%s = %v, want an array", at, v)
		}
		for _, it := range a {
			conform(t, at+"[]", *n.Items, it)
		}
	}
	if n.Required == nil && n.Properties == nil {
		return
	}
	obj, ok := v.(map[string]any)
	if !ok {
		t.Errorf("%s = %v, want an object", at, v)
		return
	}
	for _, k := range n.Required {
		if _, ok := obj[k]; !ok {
			t.Errorf("%s lacks required %q", at, k)
		}
	}
	for k, pv := range obj {
		pn, known := n.Properties[k]
		if !known {
			t.Errorf("%s has %q, which the schema does not define", at, k)
			continue
		}
		conform(t, at+"."+k, pn, pv)
	}
}

// The notice and compaction_update shapes (schema.go, their one
// definition) are written as the golden lines under testdata/ and conform
// to the schema's variants.
func TestExtensionShapesMatchTheSchema(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "schema_extensions.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]json.RawMessage
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	comp := event.Compaction{Reason: event.CompactCommand, Note: "Compacted: summarized 2 older turns.", Summary: "The user listed files.", Before: 900, After: 200, Size: 1000, SummaryBefore: 4}
	cases := map[string]any{
		"notice":            presentation.NewNotice(presentation.SeverityWarning, `MCP server "gh" is not available`, "exec: not found. Its tools are missing from this session."),
		"compaction_update": presentation.NewCompactionUpdate(comp),
	}
	for kind, u := range cases {
		var line bytes.Buffer
		if err := presentation.NewUpdateWriter(&line).Extension(sessionID, u); err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata", "extension_"+kind+".json")
		if *update {
			if err := os.WriteFile(golden, line.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(line.Bytes(), want) {
			t.Errorf("%s:\n got %s\nwant %s", kind, line.Bytes(), want)
		}
		var n schemaNode
		if err := json.Unmarshal(schema[kind], &n); err != nil {
			t.Fatalf("schema %s: %v", kind, err)
		}
		var msg struct {
			Params struct {
				Update any `json:"update"`
			} `json:"params"`
		}
		if err := json.Unmarshal(line.Bytes(), &msg); err != nil {
			t.Fatal(err)
		}
		conform(t, kind, n, msg.Params.Update)
	}
}

// A compaction's id is the same for the event and its journal round trip
// (JSON), and differs between two compactions.
func TestCompactionIDStableOverTheJournal(t *testing.T) {
	c := event.Compaction{Reason: event.CompactThreshold, Note: "n", Before: 10, After: 5, Size: 20, Cost: 0.1234567891, Currency: "USD"}
	b, _ := json.Marshal(c)
	var back event.Compaction
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if presentation.CompactionID(c) != presentation.CompactionID(back) {
		t.Error("the id changed over a JSON round trip")
	}
	c2 := c
	c2.Before = 11
	if presentation.CompactionID(c) == presentation.CompactionID(c2) {
		t.Error("two compactions share an id")
	}
}

// Session capabilities are read from the raw initialize params: on only
// for an object.
func TestSessionCapsFrom(t *testing.T) {
	for params, want := range map[string]presentation.SessionCaps{
		`{}`: {},
		`{"clientCapabilities":{"session":{"notices":{},"compaction":{}}}}`:     {Notices: true, Compaction: true},
		`{"clientCapabilities":{"session":{"notices":{}}}}`:                     {Notices: true},
		`{"clientCapabilities":{"session":{"notices":true,"compaction":null}}}`: {},
		`not json`: {},
	} {
		if got := presentation.SessionCapsFrom(json.RawMessage(params)); got != want {
			t.Errorf("%s: %+v, want %+v", params, got, want)
		}
	}
}
