package presentation

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The _meta values append exactly what encoding/json writes for them.
func TestMetaValuesAppendAsEncodingJSON(t *testing.T) {
	code, sig := 3, "TERM"
	neg := -1
	for _, v := range []interface{ AppendJSON([]byte) []byte }{
		terminalInfo{TerminalID: "c1"}, terminalInfo{TerminalID: "c\"1", Cwd: "/tmp/<a&b>"},
		terminalOutput{TerminalID: "c1", Data: "a\x00\x1b[1mb\u2028\n"},
		terminalExit{TerminalID: "c1"}, terminalExit{TerminalID: "c1", ExitCode: &code, Signal: &sig},
		terminalExit{TerminalID: "c1", ExitCode: &neg},
	} {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		want := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		if got := v.AppendJSON(nil); !bytes.Equal(got, want) {
			t.Errorf("%#v:\n got %s\nwant %s", v, got, want)
		}
	}
}
