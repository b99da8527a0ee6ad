package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
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
// and with the unsandboxed local executor. It reports the medians and the
// ratios.
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
	runs := func(ex *Executor, s executor.Spec) func() error {
		return func() error {
			res, err := ex.Run(context.Background(), s, nil)
			if err == nil && res.ExitCode != 0 {
				err = fmt.Errorf("exit %d: %s", res.ExitCode, res.Stderr)
			}
			return err
		}
	}
	sides := []func() error{direct, runs(e, spec), runs(plain, off)}
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
	md, ms, ml := median(times[0]), median(times[1]), median(times[2])
	ratio := float64(ms) / float64(md)
	b.ReportMetric(float64(md.Microseconds()), "bwrap-µs")
	b.ReportMetric(float64(ms.Microseconds()), "sandboxed-µs")
	b.ReportMetric(float64(ml.Microseconds()), "unsandboxed-µs")
	b.ReportMetric(ratio, "ratio")
	b.Logf("a foreground `true` (%d calls each): sandboxed Run median %v, direct bwrap median %v (ratio %.2f, target ≤ %.2f), unsandboxed Run median %v (sandbox costs %.1f×)",
		len(times[1]), ms, md, ratio, overheadTarget, ml, float64(ms)/float64(ml))
}

// directBwrap returns a function that runs spec's sandbox as a plain
// exec.Command of bwrap with the arguments Spawn would use.
func directBwrap(b *testing.B, spec executor.Spec) (func() error, error) {
	sp, err := NewSpawner(Config{Config: local.Config{StateDir: b.TempDir()}, Home: testHome(b)})
	if err != nil {
		return nil, err
	}
	b.Cleanup(func() { sp.Close() })
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
	return func() error {
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		defer r.Close()
		cmd := exec.Command(sp.bwrap, argv...)
		cmd.Env, cmd.ExtraFiles = env, []*os.File{w}
		err = cmd.Run()
		w.Close()
		return err
	}, nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
