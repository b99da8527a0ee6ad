package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// options are the command line's.
type options struct {
	runs         int
	captureBytes int64
	replayCalls  int
	latencyLines int
	changesFiles int            // files in the big tree of the change-tracking rows
	only         *regexp.Regexp // nil: every bench
	// testBuild builds as the test suite does (-race when ACPTEST_RACE=1),
	// sharing its build cache, instead of as the README does: for the
	// smoke test, whose figures mean nothing anyway.
	testBuild bool
}

// A bench measures one family of rows. Add one by writing a function of
// this type and listing it in benches.
type bench struct {
	name string // what -only matches
	run  func(h *harness) ([]row, error)
}

// benches lists every bench, in the order the table prints them.
func benches() []bench {
	return []bench{
		{"start-up", startupRows},
		{"call", callRows},
		{"latency", latencyRows},
		{"capture", captureRows},
		{"replay", replayRows},
		{"shutdown", shutdownRows},
		{"changes", changesRows},
	}
}

// harness is what a bench gets: the built daemon, this program (for its
// child subcommands), a scratch directory and the options.
type harness struct {
	bin  string // the built dsh-acp
	self string // this program: run as `self tick …`, `self decode …`
	work string // scratch; removed at the end
	opt  options
}

// runs scales the paired runs of a slow bench: a divisor of the -runs
// asked for, at least 3 (at least 2 when -runs itself is smaller).
func (h *harness) runs(div int) int {
	return max(min(3, h.opt.runs), h.opt.runs/div)
}

// env is the daemon's environment: a private state directory, no model
// (not even a key stored by dsh-acp login: its config directory is private
// too), no sandbox (its baselines are unsandboxed: the sandbox's own cost
// belongs in rows of its own, with DSH_SANDBOX set in extra), quiet logs,
// and extra settings (KEY=value) on top, which win.
func (h *harness) env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "DSH_") || strings.HasPrefix(kv, "DEEPSEEK_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "DSH_STATE_DIR="+filepath.Join(h.work, "state"), "XDG_CONFIG_HOME="+filepath.Join(h.work, "config"),
		"DSH_SANDBOX=off", "DSH_LOG_LEVEL=error")
	return append(env, extra...)
}

// spawn starts the daemon with h.env(extra...).
func (h *harness) spawn(extra ...string) (*agentProc, error) {
	return spawn(h.bin, h.env(extra...))
}

// measure builds the daemon and runs every bench -only selects.
func measure(o options) ([]row, error) {
	work, err := os.MkdirTemp("", "dsh-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	bin, err := buildPackage(o, work, "dsh-acp", "./cmd/dsh-acp")
	if err != nil {
		return nil, fmt.Errorf("build dsh-acp (run from the repository root): %w", err)
	}
	h := &harness{bin: bin, self: self, work: work, opt: o}
	var rows []row
	for _, b := range benches() {
		if o.only != nil && !o.only.MatchString(b.name) {
			continue
		}
		r, err := b.run(h)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.name, err)
		}
		rows = append(rows, r...)
	}
	return rows, nil
}

// buildPackage compiles a main package of this module into work/name, as
// the README builds the daemon (static, -trimpath), or as the tests do.
func buildPackage(o options, work, name, pkg string) (string, error) {
	bin := filepath.Join(work, name)
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if o.testBuild {
		cmd = exec.Command("go", "build", "-o", bin, pkg)
		if os.Getenv("ACPTEST_RACE") == "1" {
			cmd = exec.Command("go", "build", "-race", "-o", bin, pkg)
		}
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return bin, cmd.Run()
}
