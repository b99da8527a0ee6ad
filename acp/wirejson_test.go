package acp

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/presentation"
)

var jsonStrings = []string{
	"", "plain", "a\x00b", "\x1b[31mred\x1b[0m\r\n", "tab\there", "\b\f", `quote " and \ back`,
	"<html> & </html>", "\u2028\u2029", "é€😀", "bad \xff\xfe utf-8", "\x7f del", strings.Repeat("\x00", 100),
	"trailing \xe2\x82", // a cut character
}

// appendJSONString writes exactly what encoding/json writes with HTML
// escaping off (the update writer's setting).
func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range jsonStrings {
		if got, want := string(appendJSONString(nil, s)), stdJSONString(t, s); got != want {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range jsonStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(appendJSONString(nil, s)), stdJSONString(t, s); got != want {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	})
}

func stdJSONString(t testing.TB, s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// A live output update is the same bytes through the direct path as
// through the generic encoder.
func TestLiveOutputLineMatchesTheGenericEncoder(t *testing.T) {
	for _, data := range jsonStrings[1:] {
		u, ok := presentation.CardOutput("call_1", data, presentation.Caps{Terminal: true})
		if !ok {
			t.Fatal("no live output update")
		}
		var direct bytes.Buffer
		if err := newUpdateWriter(&direct).SessionUpdate(t.Context(), sdk.SessionNotification{SessionId: "s\"1", Update: u}); err != nil {
			t.Fatal(err)
		}
		var generic bytes.Buffer
		enc := json.NewEncoder(&generic)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(wireNotification{JSONRPC: "2.0", Method: sdk.ClientMethodSessionUpdate,
			Params: wireParams{SessionID: "s\"1", Update: variant(u)}}); err != nil {
			t.Fatal(err)
		}
		if direct.String() != generic.String() {
			t.Errorf("data %q:\ndirect  %s\ngeneric %s", data, direct.Bytes(), generic.Bytes())
		}
	}
}

// Encoding live output allocates nothing once the writer's buffer has
// grown: no intermediate copy of the data, whatever it holds.
func TestLiveOutputEncodingDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop buffers at random; run without -race")
	}
	w := newUpdateWriter(io.Discard)
	u, _ := presentation.CardOutput("call_1", strings.Repeat("\x00", 64<<10), presentation.Caps{Terminal: true})
	n := sdk.SessionNotification{SessionId: "s1", Update: u}
	if err := w.SessionUpdate(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(50, func() { _ = w.SessionUpdate(t.Context(), n) }); allocs > 0 {
		t.Errorf("a 64 KiB live output update allocated %v times, want 0", allocs)
	}
}
