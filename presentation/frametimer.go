package presentation

import "time"

// afterFrame runs f once, at due and not before, typically within tens of
// microseconds of it; it returns the timer, whose Stop prevents f only
// until the timer fires (a caller that must not act late checks for itself,
// as cardStream's generation does).
//
// A plain time.AfterFunc is only as precise as the runtime's poller sleep.
// On Linux that sleep is counted in whole milliseconds, so an idle daemon's
// 16.7 ms timer fires up to a millisecond late (half a millisecond on
// average), and a flush paced at one frame would miss the frame. So the
// timer is armed timerSlop early and the rest is slept by sleepUntil,
// which the kernel times to its timer slack (50 µs by default). Where the
// poller's sleep is precise (kqueue's timeout is in nanoseconds), timerSlop
// is zero and sleepUntil returns at once.
func afterFrame(due time.Time, f func()) *time.Timer {
	return time.AfterFunc(max(time.Until(due)-timerSlop, 0), func() {
		sleepUntil(due)
		f()
	})
}
