package presentation

import (
	"time"

	"golang.org/x/sys/unix"
)

// timerSlop is how late the runtime's timers fire on Linux at worst: its
// poller sleeps with epoll_wait's millisecond timeout, rounding the last
// fraction up to a whole millisecond.
const timerSlop = time.Millisecond

// sleepUntil blocks the calling thread in nanosleep(2) until t. It is
// called for at most timerSlop (plus scheduling delay), so the thread it
// holds is held briefly; an interrupted sleep resumes. The thread's timer
// slack is set to its minimum first: the kernel's default lets a sleep
// end up to 50 µs late to batch wake-ups, and a thread keeps the setting
// (harmless for the runtime's other uses of it).
func sleepUntil(t time.Time) {
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	for {
		d := time.Until(t)
		if d <= 0 {
			return
		}
		ts := unix.NsecToTimespec(d.Nanoseconds())
		_ = unix.Nanosleep(&ts, nil) // EINTR: the loop sleeps the rest
	}
}
