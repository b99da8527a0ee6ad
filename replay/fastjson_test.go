package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// journalLines are the lines of every recorded session, of every record
// type this package writes, plus a generated journal.
func journalLines(t testing.TB) [][]byte {
	t.Helper()
	var lines [][]byte
	paths, _ := filepath.Glob("../testdata/sessions/*.jsonl")
	v2, _ := filepath.Glob("../testdata/sessions/v2/*.jsonl")
	for _, p := range append(paths, v2...) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, bytes.Split(bytes.TrimSpace(b), []byte("\n"))...)
	}
	var gen bytes.Buffer
	if err := GenerateJournal(&gen, 3, "00000000-0000-4000-8000-000000000000", "/tmp"); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&gen)
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	if len(paths) == 0 || len(v2) == 0 {
		t.Fatal("no recorded sessions found")
	}
	return lines
}

// The fast decoder takes every line this package writes, and gives what
// json.Unmarshal gives.
func TestFastDecodeTakesWhatTheJournalWrites(t *testing.T) {
	for i, line := range journalLines(t) {
		var fast, std wireRecord
		took := fastDecode(line, &fast)
		if err := json.Unmarshal(line, &std); err != nil {
			if took {
				t.Errorf("line %d: the fast decoder took %s, which encoding/json refuses: %v", i, line, err)
			}
			continue // a torn record, on purpose
		}
		if !took {
			t.Errorf("line %d: the fast decoder refused %s", i, line)
			continue
		}
		if !reflect.DeepEqual(fast, std) {
			t.Errorf("line %d: fast %+v\nstd  %+v", i, fast, std)
		}
	}
}

func TestFastDecodeLeavesTheRestToEncodingJSON(t *testing.T) {
	for _, line := range []string{
		`{"v":1,"V":2}`,                             // another spelling
		`{"v":1,"v":2}`,                             // a key twice
		`{"v":1,"other":true}`,                      // an unknown key
		`{"v":1.5}`,                                 // not an integer
		`{"v":1,"text":"\ud83d\ude00"}`,             // a surrogate pair
		"{\"v\":1,\"text\":\"\xff\"}",               // invalid UTF-8
		`{"v":1,"args":null}`,                       // null
		`{"v":1,"args":{"a":1,}}`,                   // invalid JSON
		`{"v":1} trailing`,                          // more after the record
		`{"v":1,"result":{"exitCode":1e3}}`,         // an exponent
		`{"v":1,"args":"x","argsText":"y"}`,         // two spellings of the arguments
		`{"v":1,"toolCalls":[{"id":"a","id":"b"}]}`, // a key twice, nested
	} {
		var w wireRecord
		if fastDecode([]byte(line), &w) {
			t.Errorf("the fast decoder took %s", line)
		}
	}
}

// Whatever the input, when the fast decoder takes a line, json.Unmarshal
// takes it too and decodes the same record.
func FuzzFastDecodeMatchesEncodingJSON(f *testing.F) {
	for _, line := range journalLines(f) {
		f.Add(line)
	}
	f.Add([]byte(`{"v":2,"seq":7,"type":"tool_result","result":{"text":"a\u00e9\n\"b\"","exitCode":-3,"timeoutMs":12,"task":{"id":"t","status":"running"},"payload":[1,-2.5e+3,{"x":[true,false,null]}],"cardOutputZ":"AAEC"}}`))
	f.Add([]byte(`{"v":2,"seq":8,"type":"output","id":"c","textZ":"AAEC"}`))
	f.Add([]byte(`{"v":2,"seq":9,"type":"tool_call","id":"c","name":"bash","args":{"command":"ls"},"pending":true}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var fast wireRecord
		if !fastDecode(line, &fast) {
			return
		}
		var std wireRecord
		if err := json.Unmarshal(line, &std); err != nil {
			t.Fatalf("the fast decoder took %q, which encoding/json refuses: %v", line, err)
		}
		if !reflect.DeepEqual(fast, std) {
			t.Fatalf("%q:\nfast %+v\nstd  %+v", line, fast, std)
		}
	})
}
