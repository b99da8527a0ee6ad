package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// latencyRows: how long a printed line takes to reach the client as live
// card output, against reading the same command's pipe directly. The
// command (`dsh-bench tick`) stamps each line with the wall clock when it
// writes it; the client notes the clock when the line arrives.
func latencyRows(h *harness) ([]row, error) {
	var rows []row
	for _, g := range []struct {
		gap      time.Duration
		lines    int
		p50Limit float64 // < 0: a reference figure
	}{
		{20 * time.Millisecond, max(10, h.opt.latencyLines/2), 2},
		{10 * time.Millisecond, h.opt.latencyLines, -1},
		{time.Millisecond, 3 * h.opt.latencyLines, -1},
	} {
		r, err := latencyGap(h, g.gap, g.lines, g.p50Limit)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r...)
	}
	return rows, nil
}

func latencyGap(h *harness, gap time.Duration, lines int, p50Limit float64) ([]row, error) {
	a, err := h.spawn()
	if err != nil {
		return nil, err
	}
	defer a.close()
	if err := a.initialize(); err != nil {
		return nil, err
	}
	sid, err := a.newSession(h.work)
	if err != nil {
		return nil, err
	}
	var p50, p99 pairs
	var rates samples
	tick := []string{"tick", gap.String(), strconv.Itoa(lines)}
	for i := range h.runs(3) {
		// Alternate which goes first, as pair does.
		var d, base latencyRun
		var derr, berr error
		if i%2 == 0 {
			d, derr = daemonLatency(a, sid, h.self, tick, lines)
			base, berr = pipeLatency(h.self, tick, lines)
		} else {
			base, berr = pipeLatency(h.self, tick, lines)
			d, derr = daemonLatency(a, sid, h.self, tick, lines)
		}
		if derr != nil {
			return nil, derr
		}
		if berr != nil {
			return nil, berr
		}
		p50.subject, p50.baseline = append(p50.subject, d.lat.quantile(0.5)), append(p50.baseline, base.lat.quantile(0.5))
		p99.subject, p99.baseline = append(p99.subject, d.lat.quantile(0.99)), append(p99.baseline, base.lat.quantile(0.99))
		rates = append(rates, d.updatesPerSecond())
	}
	name := fmt.Sprintf("live output, lines %v apart", gap)
	return []row{
		addedRow(name+": p50 added latency", "ms", p50, p50Limit),
		addedRow(name+": p99 added latency", "ms", p99, 17),
		boundRow(name+": updates per second", "/s", rates, 60),
	}, nil
}

// latencyRun is one run's line latencies (ms) and update arrival times.
type latencyRun struct {
	lat     samples
	updates []time.Time
}

// updatesPerSecond is the run's rate of output updates, first to last.
func (r latencyRun) updatesPerSecond() float64 {
	if len(r.updates) < 2 {
		return 0
	}
	return float64(len(r.updates)-1) / r.updates[len(r.updates)-1].Sub(r.updates[0]).Seconds()
}

// daemonLatency runs the ticker as a `!` command and times each line's
// arrival in the card's live output.
func daemonLatency(a *agentProc, sid, self string, tick []string, lines int) (latencyRun, error) {
	var run latencyRun
	var partial, shown []byte
	var perr error
	_, err := a.prompt(sid, "!"+shellQuote(append([]string{self}, tick...)), func(line []byte) {
		at := time.Now()
		if !bytes.Contains(line, []byte(`"terminal_output"`)) {
			return
		}
		var n struct {
			Params struct {
				Update struct {
					Meta struct {
						Output struct {
							Data string `json:"data"`
						} `json:"terminal_output"`
						Exit json.RawMessage `json:"terminal_exit"`
					} `json:"_meta"`
				} `json:"update"`
			} `json:"params"`
		}
		if err := json.Unmarshal(line, &n); err != nil {
			perr = err
			return
		}
		if n.Params.Update.Meta.Exit == nil {
			run.updates = append(run.updates, at)
		}
		partial = append(partial, n.Params.Update.Meta.Output.Data...)
		if len(shown) < 300 {
			shown = append(shown, n.Params.Update.Meta.Output.Data...)
		}
		partial = stampLatencies(partial, at, &run.lat)
	})
	if err == nil {
		err = perr
	}
	if err == nil && len(run.lat) != lines {
		err = fmt.Errorf("the card showed %d of the ticker's %d lines (output: %.300q)", len(run.lat), lines, shown)
	}
	return run, err
}

// pipeLatency is the baseline: the ticker's stdout read from a pipe.
func pipeLatency(self string, tick []string, lines int) (latencyRun, error) {
	var run latencyRun
	cmd := exec.Command(self, tick...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return run, err
	}
	if err := cmd.Start(); err != nil {
		return run, err
	}
	r := bufio.NewReader(out)
	for {
		line, err := r.ReadSlice('\n')
		at := time.Now()
		if len(line) > 0 {
			stampLatencies(line, at, &run.lat)
		}
		if err != nil {
			break
		}
	}
	if err := cmd.Wait(); err != nil {
		return run, err
	}
	if len(run.lat) != lines {
		return run, fmt.Errorf("the pipe gave %d of the ticker's %d lines", len(run.lat), lines)
	}
	return run, nil
}

// stampLatencies adds the latency of each whole ticker line in b, seen at
// at, to lat and returns what is left of an unfinished line.
func stampLatencies(b []byte, at time.Time, lat *samples) []byte {
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return b
		}
		line := b[:i]
		b = b[i+1:]
		if len(line) < 2 || line[0] != 'T' {
			continue
		}
		stamp, _, _ := bytes.Cut(line[1:], []byte(" "))
		ns, err := strconv.ParseInt(string(stamp), 10, 64)
		if err == nil {
			*lat = append(*lat, ms(at.Sub(time.Unix(0, ns))))
		}
	}
}

// tickChild is `dsh-bench tick GAP N`: N lines GAP apart, each starting
// with T and the wall clock in nanoseconds when it was written, padded to
// a log line's length.
func tickChild(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: dsh-bench tick GAP LINES")
		return 2
	}
	gap, err := time.ParseDuration(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	n, err := strconv.Atoi(args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	const pad = " 2026-01-02T03:04:05Z INFO request served path=/api/v1/items status=200\n"
	start := time.Now()
	buf := make([]byte, 0, 128)
	for i := range n {
		time.Sleep(time.Until(start.Add(time.Duration(i) * gap)))
		buf = strconv.AppendInt(append(buf[:0], 'T'), time.Now().UnixNano(), 10)
		buf = append(buf, pad...)
		if _, err := os.Stdout.Write(buf); err != nil {
			return 1
		}
	}
	return 0
}

// shellQuote joins words for bash, each single-quoted.
func shellQuote(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
