package main

import (
	"runtime"
	"runtime/debug"
)

// daemonGCPercent is the garbage collector's target when GOGC is not set:
// the daemon's live heap is a few MiB, so collecting at half again its
// size (instead of twice) keeps its resident memory flat under bulk output
// (a gigabyte captured, a long session reloaded) for little CPU.
const daemonGCPercent = 50

// tuneGC applies daemonGCPercent from the first collection on, unless the
// user set GOGC. Start-up, whose heap stays under the default target's
// 4 MiB minimum (the lower target's would be 2 MiB, which start-up crosses:
// an SDK buffer alone is 1 MiB), so runs without a collection.
func tuneGC(lookup envLookup) {
	if _, set := lookup("GOGC"); set {
		return
	}
	runtime.AddCleanup(&gcSentinel{}, func(struct{}) { debug.SetGCPercent(daemonGCPercent) }, struct{}{})
}

// gcSentinel is unreachable from the start: the first collection frees it
// and runs its cleanup. (It holds a pointer, so it is never a tiny object,
// which could outlive its collection.)
type gcSentinel struct{ _ *int }
