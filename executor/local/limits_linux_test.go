package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
)

// requireLimits skips, printing why, where no pids cgroup can be made.
func requireLimits(t *testing.T, l Limits) {
	t.Helper()
	sp, err := NewSpawner(SpawnerConfig{Limits: l})
	if err != nil {
		t.Fatal(err)
	}
	why := sp.LimitsUnavailable()
	sp.Close()
	if why != nil {
		t.Skipf("no process limit can be set here: %v", why)
	}
}

// TestForkBombIsContained: a fork bomb hits its command's pids limit, the
// result says so, and the daemon (this test) can still start commands.
func TestForkBombIsContained(t *testing.T) {
	limits := Limits{Pids: 64, TotalPids: 256}
	requireLimits(t, limits)
	e := newTestExecutor(t, Config{Limits: limits, Grace: 100 * time.Millisecond})
	spec := resolve(t, e, `bomb() { bomb | bomb & }; bomb; sleep 5`)
	spec.Timeout = 3 * time.Second
	res := run(t, e, spec)
	if res.LimitHit != "pids" || !res.TimedOut {
		t.Errorf("fork bomb: LimitHit %q timedOut %v (stderr tail %q)", res.LimitHit, res.TimedOut, tail(res.Stderr))
	}
	if !strings.Contains(string(res.Stderr), "fork") {
		t.Errorf("stderr %q: the failed forks should show", tail(res.Stderr))
	}
	after := run(t, e, resolve(t, e, "echo alive"))
	if string(after.Stdout) != "alive\n" || after.LimitHit != "" {
		t.Errorf("after the bomb: %+v", after)
	}
	// A command under its limit says nothing.
	if quiet := run(t, e, resolve(t, e, "for i in 1 2 3; do true & done; wait")); quiet.LimitHit != "" {
		t.Errorf("LimitHit %q without a bomb", quiet.LimitHit)
	}
}

// TestLimitsCleanUp: the daemon's commands cgroup goes away on Shutdown.
func TestLimitsCleanUp(t *testing.T) {
	requireLimits(t, Limits{})
	sp, err := NewSpawner(SpawnerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	root := sp.limits.root
	if _, err := os.Stat(filepath.Join(root, "pids.max")); err != nil {
		t.Fatalf("commands cgroup: %v", err)
	}
	e := newTestExecutor(t, Config{})
	res := run(t, e, resolve(t, e, "cat /proc/self/cgroup"))
	if !strings.Contains(string(res.Stdout), "/dsh-acp-") {
		t.Errorf("the command is not in a daemon cgroup: %q", res.Stdout)
	}
	sp.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(root); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is still there after Close", root)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func tail(b []byte) string {
	if len(b) > 200 {
		b = b[len(b)-200:]
	}
	return string(b)
}

var _ = executor.LevelOff
