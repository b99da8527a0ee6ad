package local

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
)

// testGrace is the TERM→KILL grace used by tests that do not care about it.
const testGrace = 300 * time.Millisecond

// newTestExecutor returns an Executor with a private StateDir and a short
// grace, shut down when the test ends.
func newTestExecutor(t *testing.T, cfg Config) *Executor {
	t.Helper()
	if cfg.StateDir == "" {
		cfg.StateDir = t.TempDir()
	}
	if cfg.Grace == 0 {
		cfg.Grace = testGrace
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return e
}

// resolve builds a Spec for command in a fresh temporary workdir.
func resolve(t *testing.T, e *Executor, command string) executor.Spec {
	t.Helper()
	spec, err := e.Resolve(executor.Request{Command: command, SessionCwd: t.TempDir()})
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	return spec
}

// run runs command in the foreground and fails the test on an error.
func run(t *testing.T, e *Executor, spec executor.Spec) executor.Result {
	t.Helper()
	res, err := e.Run(context.Background(), spec, nil)
	if err != nil {
		t.Fatalf("Run(%.60q): %v", spec.Command, err)
	}
	return res
}

// firstLinePID parses the pid a command printed as its first line (`echo $$`).
func firstLinePID(t *testing.T, out []byte) int {
	t.Helper()
	line, _, _ := bytes.Cut(out, []byte("\n"))
	pid, err := strconv.Atoi(strings.TrimSpace(string(line)))
	if err != nil || pid <= 1 {
		t.Fatalf("no pid on the first line of %q", out)
	}
	return pid
}

// liveInSession lists processes (not zombies) whose session or process
// group is sid, read from /proc/*/stat.
func liveInSession(sid int) []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	var pids []int
	for _, path := range dirs {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // exited meanwhile
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 4 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		pgrp, _ := strconv.Atoi(f[2])
		sess, _ := strconv.Atoi(f[3])
		if pgrp == sid || sess == sid {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
			pids = append(pids, pid)
		}
	}
	return pids
}

// requireNoSurvivors fails unless every process of session sid is gone
// within two seconds (SIGKILL was sent; a loaded kernel may need a moment).
func requireNoSurvivors(t *testing.T, sid int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		left := liveInSession(sid)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of session %d survived: %v", sid, left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// eventually polls cond (which must not block) until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
