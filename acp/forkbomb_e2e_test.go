package acp_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/eventually"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

// pidsCgroup creates a pids cgroup limited to max tasks below the test's
// own, and returns its directory and its cgroup.procs file. On cgroup v2
// it also delegates the pids controller to its children (pids is a
// threaded controller, so the cgroup may hold processes as well), as a
// container or a systemd unit with Delegate=pids does. It skips, saying
// why, where no such cgroup can be made (not root, no pids controller).
// At cleanup what is left in it is killed and it is removed.
func pidsCgroup(t *testing.T, max int) string {
	t.Helper()
	dir, v2, err := newPidsCgroup(fmt.Sprintf("dsh-e2e-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err != nil {
		skipOrFail(t, "cannot create a pids cgroup for the daemon: %v", err)
	}
	t.Cleanup(func() { removeCgroup(t, dir) })
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(max)), 0); err != nil {
		skipOrFail(t, "cannot limit the cgroup %s: %v", dir, err)
	}
	if v2 {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+pids"), 0); err != nil {
			skipOrFail(t, "cannot delegate pids below %s: %v", dir, err)
		}
	}
	return dir
}

// newPidsCgroup makes the named cgroup below the test's own
// pids cgroup: cgroup v2 where the pids controller is enabled there, else
// cgroup v1's pids hierarchy.
func newPidsCgroup(name string) (dir string, v2 bool, err error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	var v2parent, v1parent string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			for _, mnt := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
				if _, err := os.Stat(filepath.Join(mnt, "cgroup.controllers")); err == nil {
					v2parent = filepath.Join(mnt, parts[2])
					break
				}
			}
		case strings.Contains(","+parts[1]+",", ",pids,"):
			v1parent = filepath.Join("/sys/fs/cgroup/pids", parts[2])
		}
	}
	var reasons []string
	if v2parent != "" {
		b, _ := os.ReadFile(filepath.Join(v2parent, "cgroup.subtree_control"))
		if strings.Contains(" "+string(b)+" ", " pids") {
			dir := filepath.Join(v2parent, name)
			if err := os.Mkdir(dir, 0o755); err == nil {
				return dir, true, nil
			} else {
				reasons = append(reasons, "cgroup v2: "+err.Error())
			}
		} else {
			reasons = append(reasons, "cgroup v2: the pids controller is not enabled in "+v2parent)
		}
	}
	if v1parent != "" {
		dir := filepath.Join(v1parent, name)
		if err := os.Mkdir(dir, 0o755); err == nil {
			return dir, false, nil
		} else {
			reasons = append(reasons, "cgroup v1 pids: "+err.Error())
		}
	}
	if len(reasons) == 0 {
		reasons = append(reasons, "no pids cgroup hierarchy is mounted")
	}
	return "", false, errors.New(strings.Join(reasons, "; "))
}

// cgroupPids lists the processes in dir and every cgroup below it.
func cgroupPids(t *testing.T, dir string) []int {
	t.Helper()
	var pids []int
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return nil // a child cgroup removed under us
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				pids = append(pids, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pids
}

// removeCgroup kills what is left in dir and removes it and its children.
func removeCgroup(t *testing.T, dir string) {
	eventually.True(t, 20*time.Second, func() bool {
		for _, pid := range cgroupPids(t, dir) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		var dirs []string
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			_ = os.Remove(dirs[i])
		}
		_, err := os.Stat(dir)
		return errors.Is(err, fs.ErrNotExist)
	}, "cgroup %s not removed", dir)
}

// startDaemonInCgroup runs the daemon born inside the cgroup dir (a shell
// moves itself in, then execs the daemon), with a scripted model.
func startDaemonInCgroup(t *testing.T, dir string, model *llmtest.Server, args ...string) *daemon {
	t.Helper()
	wrapper := filepath.Join(t.TempDir(), "in-cgroup")
	script := fmt.Sprintf("#!/bin/sh\necho $$ > %q || exit 97\nexec %q \"$@\"\n", filepath.Join(dir, "cgroup.procs"), daemonBinary(t))
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return startModelDaemon(t, wrapper, t.TempDir(), model, args)
}

// A fork bomb under a pids limit the daemon shares (a container's, a
// systemd unit's TasksMax) neither aborts the daemon nor outlives its
// command: the daemon keeps a reserve of the shared budget, the command
// ends saying it hit its process limit (the model's text and the card's
// reason line), and the session goes on.
func TestE2EForkBombUnderSharedPidsLimit(t *testing.T) {
	cg := pidsCgroup(t, 300)
	model := llmtest.New(t)
	d := startDaemonInCgroup(t, cg, model)
	sid := d.newSessionOnly(t.TempDir())

	reply := d.promptInBackground(sid, "!:(){ :|:& };:; sleep 10")
	// Once the bomb's forks fail, the daemon must still work: another
	// session's command starts, runs and is waited for (a thread and a
	// process of the daemon's budget, the reserve).
	if _, err := d.WaitUpdate(ctxT(t), sid, func(u json.RawMessage) bool {
		return strings.Contains(string(u), "Resource temporarily unavailable")
	}); err != nil {
		t.Fatalf("the fork bomb never hit a limit: %v", err)
	}
	other := d.newSessionOnly(t.TempDir())
	if got := d.prompt(other, "!echo during"); got != "end_turn" {
		t.Fatalf("stopReason during the bomb %q", got)
	}
	if c := onlyCard(t, decodeUpdates(t, d.Updates(other))); c.terminalText() != "during\n" || c.final == nil || c.final.Status != "completed" {
		t.Errorf("a command during the bomb: output %q, final %+v", c.terminalText(), c.final)
	}
	if got := <-reply; got != "end_turn" {
		t.Fatalf("stopReason of the bomb %q", got)
	}
	select {
	case <-d.Exited():
		t.Fatalf("the daemon died during the fork bomb; stderr tail:\n%s", tailLines(d.Stderr(), 20))
	default:
	}
	bomb := onlyCard(t, decodeUpdates(t, d.Updates(sid)))
	wantReason(t, bomb, "process limit reached")

	// No process of the bomb is left: only the daemon's own are in the
	// cgroup (reaping the killed ones may take the init process a moment).
	eventually.True(t, 10*time.Second, func() bool {
		for _, pid := range cgroupPids(t, cg) {
			if pid != d.Pid() {
				return false
			}
		}
		return true
	}, "processes of the fork bomb are left in %s: %v (daemon %d)", cg, cgroupPids(t, cg), d.Pid())

	// The session keeps working, and the model reads what happened.
	if got := d.prompt(sid, "!echo ok"); got != "end_turn" {
		t.Fatalf("stopReason after the bomb %q", got)
	}
	var ok *card
	for _, c := range cards(decodeUpdates(t, d.Updates(sid))) {
		if c.open.Title == "echo ok" {
			ok = c
		}
	}
	if ok == nil || ok.terminalText() != "ok\n" || ok.final == nil || ok.final.Status != "completed" {
		t.Fatalf("`!echo ok` after the bomb: %+v", ok)
	}
	model.Push(llmtest.Reply("noted"))
	d.promptExpect(sid, "what happened?", "end_turn")
	if seen := modelSaw(t, model); !strings.Contains(seen, "[process limit reached") {
		t.Errorf("the model's text does not say the process limit was reached:\n%s", seen)
	}
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
