package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// startupRows: spawn → initialize reply, against a minimal Go responder;
// the same responder linked with dsh-acp's libraries as a reference; and
// peak RSS after initialize + session/new.
func startupRows(h *harness) ([]row, error) {
	minimal, err := buildPackage(h.opt, h.work, "minimal", "./cmd/dsh-bench/minimal")
	if err != nil {
		return nil, fmt.Errorf("build the minimal responder: %w", err)
	}
	floor, err := buildPackage(h.opt, h.work, "floor", "./cmd/dsh-bench/floor")
	if err != nil {
		return nil, fmt.Errorf("build the floor responder: %w", err)
	}
	env := h.env()
	timed := func(bin string) func() (float64, error) {
		return func() (float64, error) {
			d, err := timeInitialize(bin, env)
			if err != nil {
				return 0, fmt.Errorf("start-up of %s: %w", filepath.Base(bin), err)
			}
			return ms(d), nil
		}
	}
	daemon, err := pair(h.opt.runs, timed(h.bin), timed(minimal))
	if err != nil {
		return nil, err
	}
	ref, err := pair(h.opt.runs, timed(floor), timed(minimal))
	if err != nil {
		return nil, err
	}
	var rss, first samples
	for range h.runs(3) {
		r, err := sessionRSS(h)
		if err != nil {
			return nil, err
		}
		rss = append(rss, float64(r)/(1<<20))
	}
	for range h.opt.runs {
		d, err := firstSession(h)
		if err != nil {
			return nil, err
		}
		first = append(first, ms(d))
	}
	refRow := ratioRow("  reference: the responder linked with dsh-acp's libraries", "ms", ref, 0, false)
	refRow.target, refRow.ok = "(reference)", true
	return []row{
		ratioRow("cold start (spawn → initialize reply)", "ms", daemon, 2, false),
		refRow,
		boundRow("peak RSS after initialize + session/new", "MiB", rss, 20),
		boundRow("first session/new (default sandbox level)", "ms", first, 5),
	}, nil
}

// firstSession measures a daemon's first session/new, sent once the
// initialize reply arrived, at the default sandbox level (the executor and
// the sandbox probe must not be on its way).
func firstSession(h *harness) (time.Duration, error) {
	a, err := h.spawn("DSH_SANDBOX=")
	if err != nil {
		return 0, err
	}
	defer a.close()
	if err := a.initialize(); err != nil {
		return 0, err
	}
	start := time.Now()
	if _, err := a.newSession(h.work); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// timeInitialize measures spawn → initialize reply, then lets the agent exit.
func timeInitialize(bin string, env []string) (time.Duration, error) {
	start := time.Now()
	a, err := spawn(bin, env)
	if err != nil {
		return 0, err
	}
	if err := a.initialize(); err != nil {
		a.close()
		return 0, err
	}
	d := time.Since(start)
	_, err = a.close()
	return d, err
}

func sessionRSS(h *harness) (int64, error) {
	a, err := h.spawn()
	if err != nil {
		return 0, err
	}
	defer a.close()
	if err := a.initialize(); err != nil {
		return 0, err
	}
	if _, err := a.newSession(h.work); err != nil {
		return 0, err
	}
	return peakRSS(a.cmd.Process.Pid)
}

// callRows: a typed `!true` through the daemon, from prompt to final card.
// Where bubblewrap can confine commands (the default path: level
// workspace) it is measured sandboxed, paired with a bare `bwrap … bash -c
// true` with the same namespaces and mounts; beside it, unsandboxed, paired
// with a bare `bash -c true`.
func callRows(h *harness) ([]row, error) {
	var rows []row
	if bwrapArgs, why := bareBwrap(h.work); why == nil {
		p, err := h.callPairs("workspace", func() error { return exec.Command("bwrap", bwrapArgs...).Run() })
		if err != nil {
			return nil, err
		}
		rows = append(rows, ratioRow("per call, sandboxed (!true → final card; vs bare bwrap … bash -c true)", "ms", p, 1.2, false))
	} else {
		fmt.Fprintf(os.Stderr, "dsh-bench: no sandboxed per-call row: %v\n", why)
	}
	p, err := h.callPairs("off", func() error { return exec.Command("bash", "-c", "true").Run() })
	if err != nil {
		return nil, err
	}
	return append(rows, ratioRow("per call, unsandboxed (!true → final card; vs bash -c true)", "ms", p, 1.2, false)), nil
}

// callPairs times `!true` through a daemon at sandbox level against direct,
// run by run.
func (h *harness) callPairs(level string, direct func() error) (pairs, error) {
	a, err := h.spawn("DSH_SANDBOX=" + level)
	if err != nil {
		return pairs{}, err
	}
	defer a.close()
	if err := a.initialize(); err != nil {
		return pairs{}, err
	}
	sid, err := a.newSession(h.work)
	if err != nil {
		return pairs{}, err
	}
	bare := func() (float64, error) {
		start := time.Now()
		err := direct()
		return ms(time.Since(start)), err
	}
	daemon := func() (float64, error) {
		start := time.Now()
		finals, failed := 0, false
		_, err := a.prompt(sid, "!true", func(line []byte) {
			if bytes.Contains(line, []byte(`"terminal_exit"`)) {
				finals++
				failed = failed || !bytes.Contains(line, []byte(`"exit_code":0`))
			}
		})
		d := ms(time.Since(start))
		if err == nil && (finals != 1 || failed) {
			err = fmt.Errorf("!true at %s produced %d final cards (failed %v), want 1 that succeeded", level, finals, failed)
		}
		return d, err
	}
	return pair(h.opt.runs*4, daemon, bare)
}

// bareBwrap is the bwrap command line of a sandbox like the daemon's at
// level workspace in ws (its namespaces, read-only root, fresh /dev, /proc,
// /tmp and /run, the workspace writable), and whether it runs here.
func bareBwrap(ws string) ([]string, error) {
	args := []string{"--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--unshare-user", "--disable-userns", "--cap-drop", "ALL", "--unshare-net",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/run",
		"--bind", ws, ws, "--chdir", ws, "--", "bash", "-c", "true"}
	if out, err := exec.Command("bwrap", args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("bwrap cannot run here: %v %s", err, bytes.TrimSpace(out))
	}
	return args, nil
}

// shutdownRows: stdin EOF → exit while `sleep 600` runs, against EOF →
// exit of an idle daemon.
func shutdownRows(h *harness) ([]row, error) {
	var busy samples
	for range h.opt.runs {
		d, err := timeBusyShutdown(h)
		if err != nil {
			return nil, err
		}
		busy = append(busy, ms(d))
	}
	return []row{boundRow("shutdown (stdin EOF → exit, sleep 600 running)", "ms", busy, 100)}, nil
}

func timeBusyShutdown(h *harness) (time.Duration, error) {
	a, err := h.spawn()
	if err != nil {
		return 0, err
	}
	if err := a.initialize(); err != nil {
		return 0, err
	}
	sid, err := a.newSession(h.work)
	if err != nil {
		return 0, err
	}
	if _, err := a.send("session/prompt", promptParams(sid, "!sleep 600")); err != nil {
		return 0, err
	}
	if err := a.waitFor(`"sessionUpdate":"tool_call"`); err != nil {
		return 0, err
	}
	d, err := a.close()
	if err != nil {
		return 0, fmt.Errorf("dsh-acp exit: %w", err)
	}
	return d, nil
}
