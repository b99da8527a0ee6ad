package main

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"
)

type samples []float64

func (s samples) sorted() samples {
	c := append(samples(nil), s...)
	sort.Float64s(c)
	return c
}

func (s samples) median() float64 {
	c := s.sorted()
	if len(c) == 0 {
		return 0
	}
	if len(c)%2 == 0 {
		return (c[len(c)/2-1] + c[len(c)/2]) / 2
	}
	return c[len(c)/2]
}

// quantile is the q-quantile (0 ≤ q ≤ 1) by the nearest rank.
func (s samples) quantile(q float64) float64 {
	c := s.sorted()
	if len(c) == 0 {
		return 0
	}
	i := int(q*float64(len(c))+0.5) - 1
	return c[min(max(i, 0), len(c)-1)]
}

func (s samples) max() float64 { return s.quantile(1) }

// spread is "min / median / max".
func (s samples) spread() string {
	if len(s) == 0 {
		return "-"
	}
	c := s.sorted()
	return fmt.Sprintf("%s / %s / %s", num(c[0]), num(s.median()), num(c[len(c)-1]))
}

func num(f float64) string {
	switch {
	case f >= 100 || f <= -100:
		return fmt.Sprintf("%.0f", f)
	case f >= 10 || f <= -10:
		return fmt.Sprintf("%.1f", f)
	}
	return fmt.Sprintf("%.2f", f)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// pairs is one figure measured against its baseline, run by run.
type pairs struct{ subject, baseline samples }

// pair runs a and b n times each, alternating which goes first so that a
// drifting machine hits both alike.
func pair(n int, a, b func() (float64, error)) (pairs, error) {
	var p pairs
	for i := range n {
		first, second := a, b
		if i%2 == 1 {
			first, second = b, a
		}
		x, err := first()
		if err != nil {
			return p, err
		}
		y, err := second()
		if err != nil {
			return p, err
		}
		if i%2 == 1 {
			x, y = y, x
		}
		p.subject, p.baseline = append(p.subject, x), append(p.baseline, y)
	}
	return p, nil
}

func (p pairs) ratios() samples {
	r := make(samples, len(p.subject))
	for i := range r {
		r[i] = p.subject[i] / p.baseline[i]
	}
	return r
}

func (p pairs) diffs() samples {
	r := make(samples, len(p.subject))
	for i := range r {
		r[i] = p.subject[i] - p.baseline[i]
	}
	return r
}

// row is one line of the table.
type row struct {
	name     string
	unit     string
	subject  samples // dsh-acp, one per run
	baseline samples // one per run, paired with subject; nil for a bound
	vs       string  // the paired comparison: median [min–max]
	target   string
	ok       bool
}

// ratioRow compares subject/baseline run by run. A throughput row is
// better when higher: its target is a floor, otherwise a ceiling.
func ratioRow(name, unit string, p pairs, limit float64, throughput bool) row {
	r := p.ratios()
	m := r.median()
	rw := row{name: name, unit: unit, subject: p.subject, baseline: p.baseline,
		vs: fmt.Sprintf("%.2f× [%.2f–%.2f]", m, r.sorted()[0], r.max())}
	if throughput {
		rw.target, rw.ok = fmt.Sprintf("≥ %.2g×", limit), m >= limit
	} else {
		rw.target, rw.ok = fmt.Sprintf("≤ %.2g×", limit), m <= limit
	}
	return rw
}

// addedRow compares subject−baseline run by run against a ceiling on what
// the daemon adds; limit < 0 makes the row a reference without a target.
func addedRow(name, unit string, p pairs, limit float64) row {
	d := p.diffs()
	m := d.median()
	rw := row{name: name, unit: unit, subject: p.subject, baseline: p.baseline,
		vs: fmt.Sprintf("+%s [%s–%s]", num(m), num(d.sorted()[0]), num(d.max())), target: "(reference)", ok: true}
	if limit >= 0 {
		rw.target, rw.ok = fmt.Sprintf("≤ +%s %s", num(limit), unit), m <= limit
	}
	return rw
}

// boundRow holds an absolute figure's median under a ceiling.
func boundRow(name, unit string, s samples, limit float64) row {
	return row{name: name, unit: unit, subject: s, target: fmt.Sprintf("≤ %s %s", num(limit), unit), ok: s.median() <= limit}
}

func printTable(w io.Writer, rows []row, o options) {
	fmt.Fprintf(w, "dsh-acp benchmark (built binary over stdio; up to %d paired runs per figure; min / median / max)\n\n", o.runs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tdsh-acp\tbaseline\tunit\tpaired: median [min–max]\ttarget\t")
	fmt.Fprintln(tw, "------\t-------\t--------\t----\t------------------------\t------\t")
	for _, r := range rows {
		verdict := "ok"
		if !r.ok {
			verdict = "MISSED"
		}
		vs := r.vs
		if vs == "" {
			vs = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s %s\t\n", r.name, r.subject.spread(), r.baseline.spread(), r.unit, vs, r.target, verdict)
	}
	tw.Flush()
}
