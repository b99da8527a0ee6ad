package sandbox

import (
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/local"
)

// BenchmarkPlan is the host-side cost the protection adds to each
// sandboxed command: resolving the hidden list, the protected set's mounts
// and placeholders (made and removed), in a repository without editor
// files (so every project name gets a placeholder).
func BenchmarkPlan(b *testing.B) {
	for _, level := range []executor.Level{executor.LevelReadOnly, executor.LevelWorkspace} {
		b.Run(string(level), func(b *testing.B) {
			home := b.TempDir()
			sp, err := NewSpawner(Config{Config: local.Config{StateDir: b.TempDir()}, Home: home})
			if err != nil {
				b.Fatal(err)
			}
			defer sp.Close()
			ws := b.TempDir()
			spec := executor.Spec{Workspace: ws, Workdir: ws, Level: level}
			b.ResetTimer()
			before := cpuTime()
			for range b.N {
				p, err := sp.plan(spec, "", 4, []string{"bash", "-c", "true"})
				if err != nil {
					b.Fatal(err)
				}
				sp.places.release(p.Placeholders)
			}
			// CPU time, which a loaded machine's waiting does not inflate.
			b.ReportMetric(float64((cpuTime()-before).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// cpuTime is the process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
