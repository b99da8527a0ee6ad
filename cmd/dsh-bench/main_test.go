package main

import (
	"os"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	// The benches run this binary as their child commands (tick, decode).
	if len(os.Args) > 1 {
		if child, ok := children[os.Args[1]]; ok {
			os.Exit(child(os.Args[2:]))
		}
	}
	os.Exit(m.Run())
}

// The benchmark runs end to end with tiny sizes and prints every row: a
// smoke test, so the command that fills the README's table cannot rot.
// Its figures mean nothing at these sizes; only that each row measured.
func TestBenchmarkPrintsEveryRow(t *testing.T) {
	t.Chdir("../..") // the module root, where the packages it builds are
	o := options{runs: 2, captureBytes: 1 << 20, replayCalls: 50, latencyLines: 10, changesFiles: 200, testBuild: true}
	rows, err := measure(o)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	printTable(&b, rows, o)
	out := b.String()
	for _, want := range []string{
		"cold start", "reference", "peak RSS after initialize", "first session/new", "per call, sandboxed", "per call, unsandboxed",
		"lines 20ms apart: p50", "lines 10ms apart: p99", "lines 1ms apart: updates per second",
		"capture 1 MiB of /dev/zero via !: throughput", "capture 1 MiB of printable via model bash: RSS growth",
		"replay 50 calls (session/load", "replay 50 calls: peak RSS", "first replayed update", "shutdown",
		"changes: tracking a command", "changes: first look", "changes: store growth",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q row in:\n%s", want, out)
		}
	}
	for _, r := range rows {
		if len(r.subject) == 0 {
			t.Errorf("row %q measured nothing", r.name)
		}
		if r.target == "" || !strings.Contains(out, r.target+" ok") && !strings.Contains(out, r.target+" MISSED") {
			t.Errorf("row %q prints no target with ok/MISSED", r.name)
		}
	}
	t.Log("\n" + out)
}

func TestPairAlternatesAndKeepsSides(t *testing.T) {
	var order []string
	n := 0.0
	a := func() (float64, error) { order = append(order, "a"); n++; return 10 * n, nil }
	b := func() (float64, error) { order = append(order, "b"); return 5, nil }
	p, err := pair(4, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, ""); got != "abbaabba" {
		t.Errorf("order %s, want abbaabba", got)
	}
	if r := p.ratios(); r[0] != 2 || r[3] != 8 || len(p.baseline) != 4 {
		t.Errorf("ratios %v, baseline %v", r, p.baseline)
	}
}
