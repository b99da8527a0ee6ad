package presentation

import (
	"slices"
	"testing"
	"time"
)

// A frame timer never fires before its due time: the 60 updates a second
// bound of the card stream rests on it.
func TestAfterFrameNeverEarly(t *testing.T) {
	for range 20 {
		due := time.Now().Add(3 * time.Millisecond)
		fired := make(chan time.Time, 1)
		afterFrame(due, func() { fired <- time.Now() })
		if at := <-fired; at.Before(due) {
			t.Fatalf("fired %v before its due time", due.Sub(at))
		}
	}
}

// A stopped frame timer that has not fired does not run its function.
func TestAfterFrameStop(t *testing.T) {
	ran := make(chan struct{}, 1)
	timer := afterFrame(time.Now().Add(time.Hour), func() { ran <- struct{}{} })
	if !timer.Stop() {
		t.Fatal("Stop reported the timer already fired")
	}
	select {
	case <-ran:
		t.Fatal("a stopped timer ran its function")
	case <-time.After(10 * time.Millisecond):
	}
}

// BenchmarkFrameLateness pairs afterFrame with time.AfterFunc run by run on
// an idle process (the trailing flush's case) and reports how late each
// fires after a one-frame wait, in microseconds: p50 and p99 of each.
func BenchmarkFrameLateness(b *testing.B) {
	late := func(arm func(time.Time, func())) float64 {
		due := time.Now().Add(DefaultFlushInterval)
		fired := make(chan time.Time, 1)
		arm(due, func() { fired <- time.Now() })
		return float64((<-fired).Sub(due).Microseconds())
	}
	frame := func(due time.Time, f func()) { afterFrame(due, f) }
	plain := func(due time.Time, f func()) { time.AfterFunc(time.Until(due), f) }
	var ours, theirs []float64
	for i := range b.N {
		if i%2 == 0 {
			ours, theirs = append(ours, late(frame)), append(theirs, late(plain))
		} else {
			theirs, ours = append(theirs, late(plain)), append(ours, late(frame))
		}
	}
	b.ReportMetric(quantile(ours, 0.5), "µs-p50-afterFrame")
	b.ReportMetric(quantile(ours, 0.99), "µs-p99-afterFrame")
	b.ReportMetric(quantile(theirs, 0.5), "µs-p50-AfterFunc")
	b.ReportMetric(quantile(theirs, 0.99), "µs-p99-AfterFunc")
}

func quantile(v []float64, q float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}
