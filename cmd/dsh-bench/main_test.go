package main

import (
	"os"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	// The capture row re-runs this binary as its measuring child.
	if len(os.Args) > 1 && os.Args[1] == "capture-child" {
		os.Exit(captureChild(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// The benchmark runs end to end with tiny sizes and prints every row: a
// smoke test, so the command that fills the README's table cannot rot.
func TestBenchmarkPrintsEveryRow(t *testing.T) {
	t.Chdir("../..") // the module root, where the packages it builds are
	rows, err := measure(2, 1<<20, 50)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	printTable(&b, rows, 2)
	out := b.String()
	for _, want := range []string{"start-up", "peak RSS", "foreground call", "capture throughput", "RSS growth", "replay 50 calls", "first replayed update", "shutdown"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q row in:\n%s", want, out)
		}
	}
	for _, r := range rows {
		if len(r.subject) == 0 {
			t.Errorf("row %q measured nothing", r.name)
		}
	}
}
