package acptest

import (
	"slices"
	"time"
)

// PairedMedians runs subject and baseline n times each, alternating which
// goes first so that drift and warm-up fall on both, and returns the median
// of each one's durations and the median of the per-run ratios
// subject/baseline (a benchmark's figure on a noisy machine). The first
// error ends it.
func PairedMedians(n int, subject, baseline func() (time.Duration, error)) (subj, base time.Duration, ratio float64, err error) {
	var ss, bs []time.Duration
	var rs []float64
	for i := range n {
		var s, b time.Duration
		if i%2 == 0 {
			if b, err = baseline(); err == nil {
				s, err = subject()
			}
		} else if s, err = subject(); err == nil {
			b, err = baseline()
		}
		if err != nil {
			return 0, 0, 0, err
		}
		ss, bs, rs = append(ss, s), append(bs, b), append(rs, float64(s)/float64(b))
	}
	slices.Sort(ss)
	slices.Sort(bs)
	slices.Sort(rs)
	return ss[n/2], bs[n/2], rs[n/2], nil
}

// RotatedMedians runs each of sides n times, in rounds whose order
// rotates by one each round, and returns the median duration of each side
// in the order given. The first error ends it.
func RotatedMedians(n int, sides ...func() error) ([]time.Duration, error) {
	times := make([][]time.Duration, len(sides))
	for i := range n {
		for k := range sides {
			j := (k + i) % len(sides)
			start := time.Now()
			if err := sides[j](); err != nil {
				return nil, err
			}
			times[j] = append(times[j], time.Since(start))
		}
	}
	medians := make([]time.Duration, len(sides))
	for j, t := range times {
		slices.Sort(t)
		medians[j] = t[len(t)/2]
	}
	return medians, nil
}
