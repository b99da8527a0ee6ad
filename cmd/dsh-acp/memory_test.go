package main

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// The daemon's target applies from the first collection on; a GOGC the
// user set is left alone.
func TestTuneGCAppliesFromTheFirstCollection(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	tuneGC(func(string) (string, bool) { return "", false })
	for i := 0; i < 1000 && gcPercent() != daemonGCPercent; i++ {
		runtime.GC() // the cleanup runs after a collection frees the sentinel
		runtime.Gosched()
	}
	if got := gcPercent(); got != daemonGCPercent {
		t.Fatalf("GC percent %d after collections, want %d", got, daemonGCPercent)
	}

	debug.SetGCPercent(100)
	tuneGC(func(name string) (string, bool) { return "200", name == "GOGC" })
	for range 3 {
		runtime.GC()
		runtime.Gosched()
	}
	if got := gcPercent(); got != 100 {
		t.Errorf("GC percent %d with GOGC set, want it untouched (100)", got)
	}
}
