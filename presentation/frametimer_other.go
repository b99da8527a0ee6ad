//go:build !linux

package presentation

import "time"

// timerSlop is zero where the runtime's poller sleeps to the nanosecond
// (kqueue on the BSDs and macOS).
const timerSlop = 0

// sleepUntil waits out whatever is left before t: nothing, unless the
// timer fired early.
func sleepUntil(t time.Time) {
	if d := time.Until(t); d > 0 {
		time.Sleep(d)
	}
}
