package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor/executortest"
)

// daemonKind is one way the daemon starts bwrap (see Spawner.launcher):
// as whom it runs and whether it is dumpable.
type daemonKind struct {
	name        string
	nobody      bool // run as uid 65534 (the tests run as root)
	nonDumpable bool
	share       int // the share of the kill runs it gets, in quarters
}

// daemonKinds are the kinds this test process can play: itself (root in
// CI: bwrap cloned directly; the helper non-dumpable, as the daemon is),
// and, when root, nobody non-dumpable (unshare(1) in front of bwrap) and
// nobody dumpable (bwrap cloned in a user namespace).
func daemonKinds() []daemonKind {
	kinds := []daemonKind{{name: "self", nonDumpable: true, share: 4}}
	if os.Geteuid() == 0 {
		kinds = append(kinds,
			daemonKind{name: "nobody-nondumpable", nobody: true, nonDumpable: true, share: 2},
			daemonKind{name: "nobody-dumpable", nobody: true, share: 1})
	}
	return kinds
}

// startDaemon starts a helper daemon of kind k in role with command in a
// fresh cwd, which it returns.
func startDaemon(t *testing.T, k daemonKind, u *unprivileged, role, command string, extraEnv ...string) (*helper, string) {
	t.Helper()
	env := append([]string{helperNonDumpableEnv + "=0"}, extraEnv...)
	if k.nonDumpable {
		env[0] = helperNonDumpableEnv + "=1"
	}
	if !k.nobody {
		cwd := tempDir(t)
		return startHelperAs(t, nil, os.Args[0], role, command, t.TempDir(), testHome(t), cwd, env...), cwd
	}
	n := newMarker()
	cwd := u.own("cwd-" + n)
	return startHelperAs(t, u.cred, u.binary, role, command, u.own("state-"+n), u.own("home-"+n), cwd, env...), cwd
}

// TestDaemonKilledRightAfterSpawn: the daemon is SIGKILLed 0–4 ms after
// Start returned, over and over, for every way it starts bwrap (40 runs as
// the test user, 20 as nobody non-dumpable, 10 as nobody dumpable, whose
// gate is the test user's: the suite's time is shared); nothing may
// survive. Before the start gate (gate_linux.go) about 1 in 100 such
// kills left the sandbox running, its bwrap adopted by init.
func TestDaemonKilledRightAfterSpawn(t *testing.T) {
	requireBwrap(t)
	runs := 40
	if testing.Short() {
		runs = 10
	}
	for _, k := range daemonKinds() {
		t.Run(k.name, func(t *testing.T) {
			var u *unprivileged
			if k.nobody {
				u = newUnprivileged(t)
			}
			leaked, runs := 0, runs*k.share/4
			for i := range runs {
				m := newMarker()
				h, _ := startDaemon(t, k, u, "start", fmt.Sprintf("(setsid sleep %s &); sleep %s", m, m))
				h.waitLine(t, "started")
				delay := time.Duration(i%5) * time.Millisecond
				time.Sleep(delay)
				h.kill()
				if left := survivors(m, time.Second); len(left) > 0 {
					leaked++
					t.Errorf("run %d (kill %v after Start): survivors %v", i, delay, left)
					killMarked(m)
				}
			}
			t.Logf("daemon SIGKILLed 0–4 ms after a spawn: %d of %d runs left a survivor", leaked, runs)
		})
	}
}

// TestUnconfirmedStartRunsNothing: a sandbox whose start the daemon never
// confirmed (it died first) runs nothing of its command and leaves nothing
// behind, whatever its bwrap armed: the helper daemon holds the gate shut,
// the test kills it 200 ms after Start (bwrap is set up by then and waits
// at the gate), and the command's first act, a file write, must not have
// happened. Without the gate the command runs at once.
func TestUnconfirmedStartRunsNothing(t *testing.T) {
	requireBwrap(t)
	for _, k := range daemonKinds() {
		if k.name == "nobody-dumpable" {
			continue // the same gate as self; the launch differs only in the clone
		}
		t.Run(k.name, func(t *testing.T) {
			var u *unprivileged
			if k.nobody {
				u = newUnprivileged(t)
			}
			m := newMarker()
			h, cwd := startDaemon(t, k, u, "start", fmt.Sprintf("touch ran; (setsid sleep %s &); sleep %s", m, m), helperGateHoldEnv+"=1")
			h.waitLine(t, "started")
			time.Sleep(200 * time.Millisecond)
			waiting := executortest.Processes(m)
			h.kill()
			if len(waiting) == 0 {
				t.Errorf("no bwrap waited at the gate before the kill")
			}
			if left := survivors(m, time.Second); len(left) > 0 {
				t.Errorf("survivors: %v", left)
				killMarked(m)
			}
			if _, err := os.Stat(filepath.Join(cwd, "ran")); !os.IsNotExist(err) {
				t.Errorf("the command ran although its start was never confirmed (stat: %v)", err)
			}
		})
	}
}
