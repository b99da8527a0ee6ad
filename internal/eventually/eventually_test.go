package eventually

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestPollReturnsOnceTrue(t *testing.T) {
	var n atomic.Int32
	err := Poll(context.Background(), func() bool { return n.Add(1) == 3 })
	if err != nil || n.Load() != 3 {
		t.Fatalf("Poll = %v after %d calls, want nil after 3", err, n.Load())
	}
}

func TestPollEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	calls := 0
	err := Poll(ctx, func() bool { calls++; return false })
	if !errors.Is(err, context.DeadlineExceeded) || calls == 0 {
		t.Fatalf("Poll = %v after %d calls, want DeadlineExceeded after at least one", err, calls)
	}
}

func TestPollChecksOnceEvenWhenDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Poll(ctx, func() bool { return true }); err != nil {
		t.Fatalf("Poll = %v, want nil: a true condition wins over an ended context", err)
	}
}

// recorder is a testing.TB that records Fatalf instead of stopping.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = format
}

func TestTrueFailsAfterTimeout(t *testing.T) {
	r := &recorder{TB: t}
	True(r, 10*time.Millisecond, func() bool { return false }, "never %s", "true")
	if r.failed == "" {
		t.Fatal("True did not fail on a condition that never held")
	}
	r = &recorder{TB: t}
	True(r, time.Second, func() bool { return true }, "always")
	if r.failed != "" {
		t.Fatalf("True failed on a condition that held: %s", r.failed)
	}
}
