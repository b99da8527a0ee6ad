package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/local"
)

const (
	// overheadTarget: sandboxed Run median / direct bwrap median, at most.
	overheadTarget   = 1.2
	minOverheadCalls = 100 // samples per side, whatever b.N is
)

// BenchmarkForegroundTrue compares, interleaved so machine load hits all
// alike, a sandboxed foreground `true` (workspace level) with the same
// `bwrap … bash -c true` started directly (the same arguments, no engine),
// and with the unsandboxed local executor. The direct bwrap is timed twice:
// until bwrap exits (it exits as soon as it has the command's status, while
// its sandbox is still being torn down) and until its sandbox is gone,
// which is what a sandboxed Run waits for (bwrap is pid 1 of a pid
// namespace of its own, reaped only once everything in it has ended).
func BenchmarkForegroundTrue(b *testing.B) {
	requireBwrap(b)
	e := newTestExecutor(b, Config{})
	plain, err := local.New(local.Config{StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = plain.Shutdown(context.Background()) })
	ws := b.TempDir()
	spec, err := e.Resolve(executor.Request{Command: "true", SessionCwd: ws, Level: executor.LevelWorkspace})
	if err != nil {
		b.Fatal(err)
	}
	off := spec
	off.Level = executor.LevelOff
	direct, err := directBwrap(b, spec)
	if err != nil {
		b.Fatal(err)
	}
	var gone []time.Duration // direct bwrap until its sandbox is gone
	directSide := func() error {
		start := time.Now()
		err := direct(func() { gone = append(gone, time.Since(start)) })
		return err
	}
	runs := func(ex *Executor, s executor.Spec) func() error {
		return func() error {
			res, err := ex.Run(context.Background(), s, nil)
			if err == nil && res.ExitCode != 0 {
				err = fmt.Errorf("exit %d: %s", res.ExitCode, res.Stderr)
			}
			return err
		}
	}
	sides := []func() error{directSide, runs(e, spec), runs(plain, off)}
	times := make([][]time.Duration, len(sides))
	b.ResetTimer()
	for i := range max(b.N, minOverheadCalls) {
		for k := range sides {
			j := (k + i) % len(sides) // rotate the order
			start := time.Now()
			if err := sides[j](); err != nil {
				b.Fatal(err)
			}
			times[j] = append(times[j], time.Since(start))
		}
	}
	b.StopTimer()
	md, mg, ms, ml := median(times[0]), median(gone), median(times[1]), median(times[2])
	ratio, ratioGone := float64(ms)/float64(md), float64(ms)/float64(mg)
	b.ReportMetric(float64(md.Microseconds()), "bwrap-µs")
	b.ReportMetric(float64(mg.Microseconds()), "bwrap-gone-µs")
	b.ReportMetric(float64(ms.Microseconds()), "sandboxed-µs")
	b.ReportMetric(float64(ml.Microseconds()), "unsandboxed-µs")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(ratioGone, "ratio-gone")
	b.Logf("a foreground `true` (%d calls each): sandboxed Run median %v; direct bwrap median %v until it exits (ratio %.2f, target ≤ %.2f), %v until its sandbox is gone (ratio %.2f); unsandboxed Run median %v (sandbox costs %.1f×)",
		len(times[1]), ms, md, ratio, overheadTarget, mg, ratioGone, ml, float64(ms)/float64(ml))
}

// directBwrap returns a function that runs spec's sandbox as a plain
// exec.Command of bwrap with the arguments Spawn would use, and calls gone
// once the sandbox's pid 1 (named on --info-fd) has ended too.
func directBwrap(b *testing.B, spec executor.Spec) (func(gone func()) error, error) {
	sp, err := NewSpawner(Config{Config: local.Config{StateDir: b.TempDir()}, Home: testHome(b)})
	if err != nil {
		return nil, err
	}
	b.Cleanup(func() { sp.Close() })
	if why := sp.Unavailable(); why != nil { // probes, and finds bwrap
		return nil, why
	}
	spill, err := os.MkdirTemp(sp.stateDir, "spill-")
	if err != nil {
		return nil, err
	}
	p, err := sp.plan(spec, spill, 3, []string{"bash", "-c", "true"})
	if err != nil {
		return nil, err
	}
	argv := args(p)
	env := os.Environ()
	return func(gone func()) error {
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		defer r.Close()
		cmd := exec.Command(sp.bwrap, argv...)
		cmd.Env, cmd.ExtraFiles = env, []*os.File{w}
		if err := cmd.Start(); err != nil {
			w.Close()
			return err
		}
		w.Close()
		info, _ := io.ReadAll(r)
		err = cmd.Wait()
		var child struct {
			Pid int `json:"child-pid"`
		}
		if json.Unmarshal(info, &child) == nil && child.Pid > 0 {
			waitGone(child.Pid)
		}
		gone()
		return err
	}, nil
}

// waitGone polls until pid has exited (gone, or a zombie: its exit path,
// the namespace teardown included, is over).
func waitGone(pid int) {
	stat := fmt.Sprintf("/proc/%d/stat", pid)
	for {
		b, err := os.ReadFile(stat)
		if err != nil {
			return
		}
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X') {
			return
		}
		time.Sleep(20 * time.Microsecond)
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkVsBareBwrap is dsh-bench's sandboxed per-call row without the
// protocol: a sandboxed foreground `true` at level workspace (the default
// path: plan, placeholders, the guard thread, the start gate, the engine)
// against a bare `bwrap … bash -c true` with the same namespaces and the
// base mounts only (read-only /, /dev, /proc, /tmp, /run, the workspace),
// alternated call by call. It reports the median of the per-pair ratios.
func BenchmarkVsBareBwrap(b *testing.B) {
	requireBwrap(b)
	e := newTestExecutor(b, Config{})
	ws := b.TempDir()
	spec, err := e.Resolve(executor.Request{Command: "true", SessionCwd: ws, Level: executor.LevelWorkspace})
	if err != nil {
		b.Fatal(err)
	}
	bare := bareArgs(ws)
	sides := []func() error{
		func() error { return exec.Command("bwrap", bare...).Run() },
		func() error {
			res, err := e.Run(context.Background(), spec, nil)
			if err == nil && res.ExitCode != 0 {
				err = fmt.Errorf("exit %d: %s", res.ExitCode, res.Stderr)
			}
			return err
		},
	}
	var ratios []float64
	var times [2][]time.Duration
	var self, kids [2]time.Duration // CPU time: the daemon's own, and its children's
	b.ResetTimer()
	for i := range max(b.N, 40) {
		var d [2]time.Duration
		for k := range sides {
			j := (k + i) % 2
			s0, k0 := cpuTime(), childrenCPUTime()
			start := time.Now()
			if err := sides[j](); err != nil {
				b.Fatal(err)
			}
			d[j] = time.Since(start)
			self[j] += cpuTime() - s0
			kids[j] += childrenCPUTime() - k0
			times[j] = append(times[j], d[j])
		}
		ratios = append(ratios, float64(d[1])/float64(d[0]))
	}
	b.StopTimer()
	slices.Sort(ratios)
	r := ratios[len(ratios)/2]
	b.ReportMetric(r, "ratio")
	b.ReportMetric(float64(median(times[0]).Microseconds()), "bare-µs")
	b.ReportMetric(float64(median(times[1]).Microseconds()), "sandboxed-µs")
	n := time.Duration(len(ratios))
	b.ReportMetric(float64((self[1] / n).Microseconds()), "daemon-cpu-µs")
	b.ReportMetric(float64((kids[1] / n).Microseconds()), "sandbox-cpu-µs")
	b.ReportMetric(float64((kids[0] / n).Microseconds()), "bare-cpu-µs")
	b.ReportMetric(float64((self[0] / n).Microseconds()), "bare-daemon-cpu-µs")
	b.Logf("%d pairs: sandboxed Run median %v, bare bwrap median %v, median of per-pair ratios %.2f (target ≤ %.2f); CPU per call: the daemon %v (%v while starting and reaping a bare bwrap), the sandbox's processes %v, the bare bwrap's %v",
		len(ratios), median(times[1]), median(times[0]), r, overheadTarget, self[1]/n, self[0]/n, kids[1]/n, kids[0]/n)
}

// childrenCPUTime is the user and system time of this process's reaped
// children so far.
func childrenCPUTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
