package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/local"
)

// BenchmarkProtectionFloor is the structural floor of per-command
// protection under bubblewrap: a bare `bwrap … bash -c true` (the
// namespaces and base mounts of BenchmarkVsBareBwrap's bare side) against
// the same bwrap plus exactly the protection and hiding arguments the
// spawner's plan produces for the workspace, with the plan made (its
// placeholders created) before and its placeholders removed after, each
// call. No daemon, engine, IPC guard or start gate: what is left is what
// any sandbox built per command with these promises pays. Alternated
// call by call; it reports the median of the per-pair ratios.
//
// Two layouts: "apart", a workspace beside the daemon's state and config
// directories (a user's project), and "inside", dsh-bench's harness,
// whose scratch directory is the workspace and holds the daemon's state
// and config directories (so they are hidden inside it, and the directory
// holding the config directory is pinned).
func BenchmarkProtectionFloor(b *testing.B) {
	requireBwrap(b)
	for _, layout := range []string{"apart", "inside"} {
		b.Run(layout, func(b *testing.B) {
			ws, sp, spill := floorSpawner(b, layout == "inside")
			spec := executor.Spec{Workspace: ws, Workdir: ws, Level: executor.LevelWorkspace}
			bare := bareArgs(ws)
			protected := func() error {
				p, err := sp.plan(spec, spill, 3, []string{"bash", "-c", "true"})
				if err != nil {
					return err
				}
				defer sp.places.release(p.Placeholders)
				p.InfoFD = 0
				return exec.Command(sp.bwrap, withoutInfoFD(args(p))...).Run()
			}
			sides := []func() error{func() error { return exec.Command(sp.bwrap, bare...).Run() }, protected}
			r, med := pairRatios(b, sides)
			b.ReportMetric(r, "ratio")
			b.ReportMetric(float64(med[0].Microseconds()), "bare-µs")
			b.ReportMetric(float64(med[1].Microseconds()), "protected-µs")
			b.Logf("%s: bare bwrap median %v, with the protection's mounts and placeholders %v: median of per-pair ratios %.2f",
				layout, med[0], med[1], r)
		})
	}
}

// floorSpawner returns a workspace, a probed Spawner for it with a fresh
// home (holding .cache and one hidden file) and a spill directory of its
// state directory; inside puts the state and config directories in the
// workspace, as dsh-bench's harness does.
func floorSpawner(b *testing.B, inside bool) (ws string, sp *Spawner, spill string) {
	ws = b.TempDir()
	base := b.TempDir()
	if inside {
		base = ws
	}
	home := testHome(b)
	if err := os.WriteFile(filepath.Join(home, ".npmrc"), []byte("x"), 0o600); err != nil {
		b.Fatal(err)
	}
	b.Setenv("XDG_CONFIG_HOME", filepath.Join(base, "config"))
	sp, err := NewSpawner(Config{Config: local.Config{StateDir: filepath.Join(base, "state")}, Home: home})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sp.Close() })
	if why := sp.Unavailable(); why != nil {
		b.Fatal(why)
	}
	spill = filepath.Join(base, "state", "spill", "s")
	if err := os.MkdirAll(spill, 0o700); err != nil {
		b.Fatal(err)
	}
	return ws, sp, spill
}

// bareArgs is BenchmarkVsBareBwrap's (and dsh-bench's) bare bwrap in ws.
func bareArgs(ws string) []string {
	return []string{"--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--unshare-user", "--disable-userns", "--cap-drop", "ALL", "--unshare-net",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/run",
		"--bind", ws, ws, "--chdir", ws, "--", "bash", "-c", "true"}
}

// withoutInfoFD drops "--info-fd N" from a bwrap command line.
func withoutInfoFD(a []string) []string {
	if i := slices.Index(a, "--info-fd"); i >= 0 {
		return slices.Delete(slices.Clone(a), i, i+2)
	}
	return a
}

// pairRatios runs the two sides alternately (max(b.N, 40) pairs, the
// order swapped each pair) and returns the median of the per-pair ratios
// sides[1]/sides[0] and each side's median time.
func pairRatios(b *testing.B, sides []func() error) (float64, [2]time.Duration) {
	var ratios []float64
	var times [2][]time.Duration
	b.ResetTimer()
	for i := range max(b.N, 40) {
		var d [2]time.Duration
		for k := range sides {
			j := (k + i) % 2
			start := time.Now()
			if err := sides[j](); err != nil {
				b.Fatal(err)
			}
			d[j] = time.Since(start)
			times[j] = append(times[j], d[j])
		}
		ratios = append(ratios, float64(d[1])/float64(d[0]))
	}
	b.StopTimer()
	slices.Sort(ratios)
	return ratios[len(ratios)/2], [2]time.Duration{median(times[0]), median(times[1])}
}
