package wirejson

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

var samples = []string{
	"", "plain", "a\x00b", "\x1b[31mred\x1b[0m\r\n", "tab\there", "\b\f", `quote " and \ back`,
	"<html> & </html>", "\u2028\u2029", "é€😀", "bad \xff\xfe utf-8", "\x7f del", strings.Repeat("\x00", 100),
	"trailing \xe2\x82", // a cut character
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range samples {
		if got, want := string(AppendString(nil, s)), stdString(t, s); got != want {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range samples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(AppendString(nil, s)), stdString(t, s); got != want {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	})
}

func stdString(t testing.TB, s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}
