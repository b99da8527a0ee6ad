package local

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

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

// The daemon keeps a reserve of a shared pids budget: all commands
// together get the room above minus the reserve, one command at most half
// of that.
func TestBoundedKeepsReserve(t *testing.T) {
	def := Limits{Pids: DefaultPids, TotalPids: DefaultTotalPids}
	tests := []struct {
		name              string
		l                 Limits
		room              int
		pids, total, keep int
	}{
		{"no limit above", def, -1, DefaultPids, DefaultTotalPids, 0},
		{"a container of 300", def, 286, 107, 215, 71},
		{"a small budget", def, 100, 25, 50, 50},
		{"plenty of room", def, 100000, DefaultPids, DefaultTotalPids, 25000},
		{"full already", def, 0, 1, 1, 0},
		{"no total asked, a budget above", Limits{Pids: 64, TotalPids: -1}, 1000, 64, 750, 250},
		{"no per-command limit", Limits{Pids: -1, TotalPids: 256}, 1000, -1, 256, 250},
	}
	for _, tc := range tests {
		b := bounded(tc.l, tc.room)
		if b.Pids != tc.pids || b.TotalPids != tc.total || b.Reserve != tc.keep {
			t.Errorf("%s: per command %d, all %d, reserve %d; want %d, %d, %d",
				tc.name, b.Pids, b.TotalPids, b.Reserve, tc.pids, tc.total, tc.keep)
		}
		if tc.room > 0 && b.TotalPids+b.Reserve > tc.room {
			t.Errorf("%s: commands %d + reserve %d exceed the room %d", tc.name, b.TotalPids, b.Reserve, tc.room)
		}
	}
}

// room is the least free budget of the cgroups from the daemon's up to the
// hierarchy's root.
func TestRoomWalksUp(t *testing.T) {
	mount := t.TempDir()
	mid := filepath.Join(mount, "container")
	own := filepath.Join(mid, "service")
	if err := os.MkdirAll(own, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(dir, max, cur string) {
		t.Helper()
		for name, v := range map[string]string{"pids.max": max, "pids.current": cur} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := room(own, mount); got != -1 {
		t.Errorf("no limits: room %d, want -1", got)
	}
	write(own, "max", "12")
	write(mid, "300", "14")
	if got := room(own, mount); got != 286 {
		t.Errorf("a container of 300: room %d, want 286", got)
	}
	write(own, "100", "12")
	if got := room(own, mount); got != 88 {
		t.Errorf("a tighter own limit: room %d, want 88", got)
	}
	write(mid, "10", "14")
	if got := room(own, mount); got != 0 {
		t.Errorf("over the limit: room %d, want 0", got)
	}
}

// TestCommandCgroupsAreReused: commands run one after another reuse the
// emptied cgroups of earlier ones instead of making (and tearing down) a
// cgroup each.
func TestCommandCgroupsAreReused(t *testing.T) {
	requireLimits(t, Limits{})
	e := newTestExecutor(t, Config{})
	const runs = 8
	seen := map[string]bool{}
	for range runs {
		res := run(t, e, resolve(t, e, "grep pids /proc/self/cgroup || cat /proc/self/cgroup"))
		line := strings.TrimSpace(string(res.Stdout))
		if !strings.Contains(line, "/dsh-acp-") {
			t.Fatalf("the command is not in a daemon cgroup: %q", line)
		}
		seen[line] = true
	}
	// Two alternate (the spawn thread waits in the next one while a
	// command runs); one more may be made when a release races the thread.
	if len(seen) > 3 {
		t.Errorf("%d commands ran in %d cgroups, want at most 3: %v", runs, len(seen), seen)
	}
}

// TestReusedCgroupReportsOnlyItsOwnHit: a command that ran into the pids
// limit says so; later commands in the same (reused) cgroup do not.
func TestReusedCgroupReportsOnlyItsOwnHit(t *testing.T) {
	limits := Limits{Pids: 4, TotalPids: 64}
	requireLimits(t, limits)
	e := newTestExecutor(t, Config{Limits: limits})
	// Every child is waited for, so the cgroup is empty when the command
	// ends and goes back for reuse.
	res := run(t, e, resolve(t, e, "for i in 1 2 3 4 5 6 7 8; do sleep 0.1 & done 2>/dev/null; wait"))
	if res.LimitHit != "pids" {
		t.Fatalf("8 children under a limit of 4: LimitHit %q", res.LimitHit)
	}
	for i := range 4 {
		if r := run(t, e, resolve(t, e, "true")); r.LimitHit != "" {
			t.Errorf("command %d after the hit: LimitHit %q", i+1, r.LimitHit)
		}
	}
}

// A command that ended while the spawn thread still waited in its cgroup
// (the thread moves on to the next cgroup only after the fork) leaves the
// cgroup parked, not lost: once the thread has moved on, it is reused.
func TestParkedCgroupReusedOnceEmpty(t *testing.T) {
	requireLimits(t, Limits{})
	l, err := newLimiter(Limits{}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { // the spawn thread's part, on a thread of its own
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		defer l.close()
		c, err := l.take() // the thread is in c now, as before a fork
		if err != nil {
			t.Error(err)
			return
		}
		if c.finish() { // the command ended before the thread moved on
			t.Error("a hit without a command")
		}
		l.prepare() // the thread moves on to the next cgroup
		if l.ready == nil || l.ready == c {
			t.Errorf("prepare did not move to another cgroup: %v", l.ready)
			return
		}
		next := l.ready
		l.ready = nil
		if got := l.unpark(); got != c {
			t.Errorf("the emptied cgroup was not reused: unpark gave %v, want %s", got, c.dir)
		}
		l.ready = next
	}()
	<-done
}
