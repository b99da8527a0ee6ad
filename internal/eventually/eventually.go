// Package eventually waits, in tests, for a condition that becomes true on
// its own time: a process that dies after a kill, a file a child writes.
// It is the one polling helper of the module's tests; wait on a real event
// (a channel, a reply, a notification) instead whenever there is one.
//
// A condition is polled with a backoff from 1 ms up to 50 ms, so a fast
// condition costs about a millisecond and a slow one wakes the CPU at most
// twenty times a second.
//
// Known limits: a condition that holds only briefly between two polls can
// be missed; conditions should be ones that stay true once reached.
package eventually

import (
	"context"
	"fmt"
	"testing"
	"time"
)

const (
	firstPause = time.Millisecond
	maxPause   = 50 * time.Millisecond
)

// True polls cond until it returns true, or fails t with the formatted
// message (and the time waited) once timeout has passed. It must be called
// from the test's goroutine, as t.Fatalf must.
func True(t testing.TB, timeout time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := Poll(ctx, cond); err != nil {
		t.Fatalf("eventually: not true within %v: %s", timeout, fmt.Sprintf(format, args...))
	}
}

// Poll polls cond until it returns true (nil) or ctx ends (ctx's error).
// cond is called at least once, even when ctx has already ended. Poll may be
// called from any goroutine.
func Poll(ctx context.Context, cond func() bool) error {
	pause := firstPause
	timer := time.NewTimer(pause)
	defer timer.Stop()
	for {
		if cond() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("eventually: %w", ctx.Err())
		case <-timer.C:
		}
		pause = min(2*pause, maxPause)
		timer.Reset(pause)
	}
}
