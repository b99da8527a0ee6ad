package replay

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// A tool_result with a large card output is built directly, byte for byte
// as the generic encoding writes it.
func TestBigResultLineMatchesTheGenericEncoding(t *testing.T) {
	card := strings.Repeat("printable <output> & \"quotes\" and \\ back, é, some more plain text to read\n", 2000) // ~150 KiB, little to escape
	task := &event.Task{ID: "bash-1", Status: event.TaskRunning}
	for i, res := range []event.Result{
		{Text: "ok", CardOutput: card},
		{Text: "a <b> & \u2028 c", IsError: true, Declined: "no \"way\"", CardOutput: card, Task: task,
			Payload: json.RawMessage(`{"exitCode": 2, "spillPath":"/x/<y>"}`)},
		{Text: "", CardOutput: card, Payload: json.RawMessage(`{"exitCode":0}`)},
	} {
		var r wireRecord
		if _, err := fromEvent(event.ToolResult{ID: "call_1", Name: "bash", Args: json.RawMessage(`{"command":"cat big"}`), Result: res}, &r); err != nil {
			t.Fatal(err)
		}
		r.V, r.Seq = Version, 9
		var generic bytes.Buffer
		enc := json.NewEncoder(&generic)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(&r); err != nil {
			t.Fatal(err)
		}
		big, ok, err := newEncoder().planResult(&r)
		line := big.bytes()
		if err != nil || !ok {
			t.Fatalf("result %d: ok %v, %v", i, ok, err)
		}
		if !bytes.Equal(line, generic.Bytes()) {
			t.Errorf("result %d differs:\n got %.300s…\nwant %.300s…", i, line, generic.Bytes())
		}
	}
}

// Journaling a 2 MiB card output costs about one buffer of the line's
// size, and the encoder keeps none of it.
func TestBigResultLineCostsOneBuffer(t *testing.T) {
	card := strings.Repeat("0123456789abcdef", 2<<20/16)
	var r wireRecord
	if _, err := fromEvent(event.ToolResult{ID: "c", Name: "bash", Result: event.Result{Text: "ok", CardOutput: card}}, &r); err != nil {
		t.Fatal(err)
	}
	e := newEncoder()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	line, err := e.line(&r)
	runtime.ReadMemStats(&m1)
	if err != nil {
		t.Fatal(err)
	}
	if got := m1.TotalAlloc - m0.TotalAlloc; got > uint64(len(line))+256<<10 {
		t.Errorf("a %d-byte line allocated %d bytes", len(line), got)
	}
	if _, err := e.line(&wireRecord{Type: typeTurnEnd}); err != nil {
		t.Fatal(err)
	}
	if e.buf.Cap() > keptLine {
		t.Errorf("the encoder keeps a %d-byte buffer", e.buf.Cap())
	}
}

// A large output checkpoint is built directly too, byte for byte; one of
// control bytes is stored deflated, and both read back exactly.
func TestOutputRecordsAreCompactAndExact(t *testing.T) {
	text := strings.Repeat("a line of live output, <not escaped> & fine\n", 3000)
	var r wireRecord
	if _, err := fromEvent(event.OutputCheckpoint{ID: "call_1", Data: text}, &r); err != nil {
		t.Fatal(err)
	}
	r.V, r.Seq = Version, 5
	var generic bytes.Buffer
	enc := json.NewEncoder(&generic)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&r); err != nil {
		t.Fatal(err)
	}
	line, err := newEncoder().line(&r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(line, generic.Bytes()) {
		t.Errorf("the output line differs from the generic encoding:\n got %.200s\nwant %.200s", line, generic.Bytes())
	}

	nul := strings.Repeat("\x00", 2<<20)
	var z wireRecord
	if _, err := fromEvent(event.OutputCheckpoint{ID: "call_1", Data: nul}, &z); err != nil {
		t.Fatal(err)
	}
	z.V, z.Seq = Version, 6
	zline, err := newEncoder().line(&z)
	if err != nil {
		t.Fatal(err)
	}
	if len(zline) > 64<<10 {
		t.Errorf("a 2 MiB NUL checkpoint took a %d-byte line", len(zline))
	}
	for _, l := range [][]byte{line, zline} {
		var back []Record
		if _, err := Scan(bytes.NewReader(l), func(rec Record) error { back = append(back, rec); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(back) != 1 {
			t.Fatalf("read %d records", len(back))
		}
		got := back[0].Event.(event.OutputCheckpoint).Data
		if got != text && got != nul {
			t.Errorf("read back %d bytes, not what was written", len(got))
		}
	}
}
