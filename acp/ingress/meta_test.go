package ingress

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestSetMeta(t *testing.T) {
	const turn = `"t7"`
	tests := []struct {
		name, params, want, err string
	}{
		{name: "empty object", params: `{}`, want: `{"_meta":{"dsh/turn":"t7"}}`},
		// Without a _meta member (a prompt as editors send it) the object is
		// kept byte for byte and the member appended: no decode and re-encode.
		{name: "keeps members as written", params: ` {"b":1, "a":[2,3] ,"c":{"x":null}} `,
			want: ` {"b":1, "a":[2,3] ,"c":{"x":null},"_meta":{"dsh/turn":"t7"}}`},
		{name: "empty object with spaces", params: `{ }`, want: `{ "_meta":{"dsh/turn":"t7"}}`},
		{name: "a word like meta takes the full path", params: ` {"b":"metadata", "a":1}`,
			want: `{"b":"metadata","a":1,"_meta":{"dsh/turn":"t7"}}`},
		{name: "an escape takes the full path", params: `{"b":"\u00e9", "a":1}`,
			want: `{"b":"\u00e9","a":1,"_meta":{"dsh/turn":"t7"}}`},
		{name: "merges into the client's meta", params: `{"_meta":{"zed":{"v":1}},"p":1}`,
			want: `{"p":1,"_meta":{"dsh/turn":"t7","zed":{"v":1}}}`},
		{name: "replaces a forged value", params: `{"_meta":{"dsh/turn":"t1"}}`,
			want: `{"_meta":{"dsh/turn":"t7"}}`},
		{name: "repeated and differently cased meta merge", params: `{"_meta":{"a":1,"b":1},"_META":{"b":2}}`,
			want: `{"_meta":{"a":1,"b":2,"dsh/turn":"t7"}}`},
		{name: "null resets", params: `{"_meta":{"a":1},"_Meta":null,"_meta":{"b":2}}`,
			want: `{"_meta":{"b":2,"dsh/turn":"t7"}}`},
		{name: "null meta", params: `{"_meta":null}`, want: `{"_meta":{"dsh/turn":"t7"}}`},
		{name: "escaped names are decoded", params: `{"\u005fmeta":{"a":1},"p\u0022":2}`,
			want: `{"p\"":2,"_meta":{"a":1,"dsh/turn":"t7"}}`},
		{name: "array", params: `[1]`, err: "not a JSON object"},
		{name: "string meta", params: `{"_meta":"x"}`, err: "_meta is not an object"},
		{name: "not JSON", params: `{"a":`, err: "not JSON"},
		{name: "trailing data", params: `{}0`, err: "not JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SetMeta(json.RawMessage(tt.params), "dsh/turn", json.RawMessage(turn))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("SetMeta = %s, %v; want an error with %q", got, err, tt.err)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("SetMeta = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
	if _, err := SetMeta(json.RawMessage(`{}`), "k", json.RawMessage(`{`)); err == nil {
		t.Error("SetMeta accepted a value that is not JSON")
	}
}

// metaHolder decodes _meta as the SDK's request types do.
type metaHolder struct {
	Meta map[string]any `json:"_meta,omitempty"`
}

// Whatever the params, a struct decodes SetMeta's result to the client's
// metadata plus the key, and every other member decodes as before.
func FuzzSetMeta(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"a":1}`, `{"_meta":{"k":"forged","x":1}}`, `{"_meta":null,"_META":{"y":2}}`,
		`{"_meta":{"a":{"b":1}},"_meta":{"a":2}}`, `{"\u005fmeta":{}}`, `[]`, `{"_meta":1}`, `{"a":"\xff"}`,
		` { "a" : 1 } `, `{"_MeTa":{}}`, `{"\u005F\u006deta":{"x":1}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		got, err := SetMeta(params, "k", json.RawMessage(`"v"`))
		var before metaHolder
		if err != nil {
			return
		}
		if !json.Valid(got) {
			t.Fatalf("SetMeta(%q) = %q: not JSON", params, got)
		}
		if json.Unmarshal(params, &before) != nil {
			t.Fatalf("SetMeta accepted %q, which does not decode as _meta holder", params)
		}
		var after metaHolder
		if err := json.Unmarshal(got, &after); err != nil {
			t.Fatalf("SetMeta(%q) = %q: %v", params, got, err)
		}
		if before.Meta == nil {
			before.Meta = map[string]any{}
		}
		before.Meta["k"] = "v"
		if !reflect.DeepEqual(before.Meta, after.Meta) {
			t.Fatalf("SetMeta(%q) = %q: meta %v, want %v", params, got, after.Meta, before.Meta)
		}
		var rest0, rest1 map[string]any
		_ = json.Unmarshal(params, &rest0)
		_ = json.Unmarshal(got, &rest1)
		for _, m := range []map[string]any{rest0, rest1} {
			for k := range m {
				if strings.EqualFold(k, "_meta") {
					delete(m, k)
				}
			}
		}
		if !reflect.DeepEqual(rest0, rest1) {
			t.Fatalf("SetMeta(%q) = %q: other members changed", params, got)
		}
	})
}
