package sandbox

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// Signal implements engine.Process. A TERM that finds no command below
// bubblewrap yet (it is still setting the sandbox up) is sent as KILL:
// bwrap and its init, each a pid 1, ignore TERM, so the stop would
// otherwise wait out the whole grace period with nothing to give it to.
// Once a command is seen running, TERM keeps its meaning. After a pid 1
// bwrap's exit (the engine's signals to a finished command's leftovers)
// nothing is left to signal, and nothing is sent.
func (p *process) Signal(sig syscall.Signal) error {
	if p.gone.Load() {
		return nil
	}
	if sig == syscall.SIGTERM && !p.started.Load() {
		if commandRunning(p.Pid()) {
			p.started.Store(true)
		} else {
			sig = syscall.SIGKILL
		}
	}
	return p.Process.Signal(sig)
}

// commandRunning reports whether a process other than bubblewrap runs
// below pid: bwrap's own processes (its init and the child that sets the
// sandbox up) carry its name until the child execs the command, and an
// unshare(1) launcher carries its own. When the
// tree cannot be read (no /proc/PID/task/PID/children on this kernel) it
// answers true, which keeps TERM's meaning.
func commandRunning(pid int) bool {
	queue := []int{pid}
	for depth := 0; depth < 4 && len(queue) > 0; depth++ {
		var next []int
		for _, p := range queue {
			kids, err := children(p)
			if err != nil && p == pid {
				return true
			}
			for _, c := range kids {
				comm, err := os.ReadFile("/proc/" + strconv.Itoa(c) + "/comm")
				if err == nil && !launcherName(string(bytes.TrimSpace(comm))) {
					return true
				}
				next = append(next, c)
			}
		}
		queue = next
	}
	return false
}

// launcherName reports whether comm names a process of the sandbox's own
// set-up: bwrap, or the unshare(1) in front of it (see viaUnshare).
func launcherName(comm string) bool { return comm == "bwrap" || comm == "unshare" }

// children lists the children of pid's main thread (bwrap is single
// threaded).
func children(pid int) ([]int, error) {
	s := strconv.Itoa(pid)
	b, err := os.ReadFile("/proc/" + s + "/task/" + s + "/children")
	if err != nil {
		return nil, err
	}
	var kids []int
	for _, f := range bytes.Fields(b) {
		if n, err := strconv.Atoi(string(f)); err == nil {
			kids = append(kids, n)
		}
	}
	return kids, nil
}
