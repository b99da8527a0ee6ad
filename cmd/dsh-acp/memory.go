package main

import (
	"runtime/debug"
	"time"
)

// daemonGCPercent is the garbage collector's target when GOGC is not set:
// the daemon's live heap is a few MiB, so collecting at half again its
// size (instead of twice) keeps its resident memory flat under bulk output
// (a gigabyte captured, a long session reloaded) for little CPU.
const daemonGCPercent = 50

// gcTuneDelay: the target applies this long after start-up, so that start-up
// itself (whose allocations, an SDK buffer of 1 MiB among them, would cross
// the lower target's 2 MiB minimum heap) runs without a collection.
const gcTuneDelay = time.Second

// tuneGC applies daemonGCPercent after gcTuneDelay, unless the user set
// GOGC.
func tuneGC(lookup envLookup) {
	if _, set := lookup("GOGC"); !set {
		time.AfterFunc(gcTuneDelay, func() { debug.SetGCPercent(daemonGCPercent) })
	}
}
