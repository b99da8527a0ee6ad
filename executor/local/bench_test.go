package local

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/acptest"
)

// Targets from the acceptance criteria.
const (
	overheadTarget   = 1.3  // executor median / bare exec median, at most
	throughputTarget = 0.75 // executor throughput / bare pipe read, at least
	rssTargetMiB     = 16   // peak RSS growth while capturing, at most
	minOverheadCalls = 200  // samples per side, whatever b.N is
	minCaptureRounds = 3    // 1 GiB runs per mode, whatever b.N is
	captureBytes     = 1 << 30
)

func newBenchExecutor(b *testing.B, limits Limits) *Executor {
	b.Helper()
	e, err := New(Config{StateDir: b.TempDir(), Limits: limits})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	return e
}

// BenchmarkForegroundTrue compares Run("true") (with the process limits
// where they apply, and without them) with a bare
// exec.Command("bash", "-c", "true").Run(), rotating the order so machine
// load hits all alike, and reports the medians and the ratio to bare.
func BenchmarkForegroundTrue(b *testing.B) {
	e, unlimited := newBenchExecutor(b, Limits{}), newBenchExecutor(b, Limits{Pids: -1, TotalPids: -1})
	spec := executor.Spec{Command: "true", Workdir: b.TempDir(), Timeout: time.Minute}
	bash, err := exec.LookPath("bash")
	if err != nil {
		b.Fatal(err)
	}
	run := func(ex *Executor) func() error {
		return func() error {
			res, err := ex.Run(context.Background(), spec, nil)
			if err == nil && res.ExitCode != 0 {
				err = fmt.Errorf("exit %d", res.ExitCode)
			}
			return err
		}
	}
	sides := []func() error{func() error { return exec.Command(bash, "-c", spec.Command).Run() }, run(e), run(unlimited)}
	b.ResetTimer()
	n := max(b.N, minOverheadCalls)
	m, err := acptest.RotatedMedians(n, sides...)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	mb, mo, mu := m[0], m[1], m[2]
	ratio := float64(mo) / float64(mb)
	b.ReportMetric(float64(mb.Microseconds()), "bare-µs")
	b.ReportMetric(float64(mo.Microseconds()), "run-µs")
	b.ReportMetric(float64(mu.Microseconds()), "run-unlimited-µs")
	b.ReportMetric(ratio, "ratio")
	b.Logf("overhead of a foreground `true` (%d calls each): Run median %v, without process limits %v, bare exec median %v, ratio %.2f (target ≤ %.2f)",
		n, mo, mu, mb, ratio, overheadTarget)
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkCapture pushes 1 GiB through a bare pipe read and through Run
// (with and without a live observer), minCaptureRounds times or b.N times
// whichever is more, interleaved; it reports median throughputs, their
// ratio to the bare read, and the largest peak RSS growth while Run captured.
func BenchmarkCapture(b *testing.B) {
	e := newBenchExecutor(b, Limits{})
	cmd := fmt.Sprintf("head -c %d /dev/zero", captureBytes)
	spec := executor.Spec{Command: cmd, Workdir: b.TempDir(), Timeout: 10 * time.Minute}
	var base, ours, live []time.Duration
	var rss int64
	rounds := max(b.N, minCaptureRounds)
	for range rounds {
		d, err := bareCapture(cmd)
		if err != nil {
			b.Fatal(err)
		}
		base = append(base, d)
		d, growth, err := runCapture(e, spec, nil)
		if err != nil {
			b.Fatal(err)
		}
		ours, rss = append(ours, d), max(rss, growth)
		d, growth, err = runCapture(e, spec, func(executor.Chunk) {})
		if err != nil {
			b.Fatal(err)
		}
		live, rss = append(live, d), max(rss, growth)
	}
	mibps := func(d []time.Duration) float64 { return captureBytes / (1 << 20) / median(d).Seconds() }
	ratio, liveRatio := mibps(ours)/mibps(base), mibps(live)/mibps(base)
	b.ReportMetric(mibps(base), "bare-MiB/s")
	b.ReportMetric(mibps(ours), "run-MiB/s")
	b.ReportMetric(mibps(live), "live-MiB/s")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(float64(rss)/(1<<20), "rss-growth-MiB")
	b.Logf("capture of 1 GiB (median of %d): Run %.0f MiB/s, Run+observer %.0f MiB/s, bare pipe read %.0f MiB/s, ratio %.2f / %.2f (target ≥ %.2f); peak RSS growth %.1f MiB (target ≤ %d)",
		rounds, mibps(ours), mibps(live), mibps(base), ratio, liveRatio, throughputTarget, float64(rss)/(1<<20), rssTargetMiB)
}

// bareCapture reads cmd's stdout from a pipe into a 64 KiB buffer and
// discards it: the floor any capture is measured against.
func bareCapture(command string) (time.Duration, error) {
	start := time.Now()
	cmd := exec.Command("bash", "-c", command)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	buf := make([]byte, 64<<10)
	for {
		if _, err := out.Read(buf); err != nil {
			break
		}
	}
	err = cmd.Wait()
	return time.Since(start), err
}

// runCapture runs spec and reports its duration and the growth of peak RSS
// (VmHWM, reset before the run) over the RSS before it.
func runCapture(e *Executor, spec executor.Spec, observe func(executor.Chunk)) (time.Duration, int64, error) {
	runtime.GC()
	debug.FreeOSMemory()
	resetPeakRSS := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	before := procStatus("VmRSS")
	start := time.Now()
	res, err := e.Run(context.Background(), spec, observe)
	took := time.Since(start)
	if err == nil && (res.ExitCode != 0 || res.Dropped+int64(len(res.Combined)) != captureBytes) {
		err = fmt.Errorf("exit %d, %d bytes", res.ExitCode, res.Dropped+int64(len(res.Combined)))
	}
	if resetPeakRSS != nil {
		return took, -1, err
	}
	return took, procStatus("VmHWM") - before, err
}

// procStatus reads a "kB" field of /proc/self/status, in bytes.
func procStatus(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok || string(name) != field {
			continue
		}
		kb, err := strconv.ParseInt(string(bytes.Fields(rest)[0]), 10, 64)
		if err != nil {
			return -1
		}
		return kb << 10
	}
	return -1
}
