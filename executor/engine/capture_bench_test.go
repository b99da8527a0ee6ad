package engine

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
)

// benchCaptureBytes is what each capture benchmark's command prints.
const benchCaptureBytes = 256 << 20

var benchSources = []struct{ name, command string }{
	{"zero", fmt.Sprintf("head -c %d /dev/zero", benchCaptureBytes)},
	{"printable", fmt.Sprintf("yes 'printable output: the quick brown fox jumps over the lazy dog 0123456789' | head -c %d", benchCaptureBytes)},
}

// BenchmarkCaptureRun runs a command printing benchCaptureBytes through
// Run with an observer that, like a terminal card, keeps the first 2 MiB
// and counts the rest: the engine's share of the dsh-bench capture rows.
// Compare with BenchmarkCapturePipe.
func BenchmarkCaptureRun(b *testing.B) {
	for _, src := range benchSources {
		b.Run(src.name, func(b *testing.B) {
			e, err := New(execSpawner{}, Config{StateDir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Shutdown(context.Background())
			spec, err := e.Resolve(executor.Request{Command: src.command, SessionCwd: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(benchCaptureBytes)
			cpu0 := cpuTime()
			for b.Loop() {
				var kept, seen int64
				res, err := e.Run(context.Background(), spec, func(c executor.Chunk) {
					seen += int64(len(c.Data)) + c.Dropped
					if kept < 2<<20 {
						kept += int64(len(c.Data))
					}
				})
				if err != nil || res.ExitCode != 0 || seen != benchCaptureBytes {
					b.Fatalf("run: %v, exit %d, observed %d", err, res.ExitCode, seen)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/1e6/float64(b.N), "cpu-ms/op")
		})
	}
}

// cpuTime is this process's user and system CPU time so far (the
// commands' own time excluded): what the engine spends.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCapturePipe is the baseline: the same commands' stdout read
// from a pipe and discarded.
func BenchmarkCapturePipe(b *testing.B) {
	for _, src := range benchSources {
		b.Run(src.name, func(b *testing.B) {
			b.SetBytes(benchCaptureBytes)
			cpu0 := cpuTime()
			for b.Loop() {
				cmd := exec.Command("bash", "-c", src.command)
				out, err := cmd.StdoutPipe()
				if err != nil {
					b.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, out); err != nil {
					b.Fatal(err)
				}
				if err := cmd.Wait(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/1e6/float64(b.N), "cpu-ms/op")
		})
	}
}
