// Package executortest is the conformance suite every executor.Executor
// must pass, in the manner of testing/fstest: an executor's own tests call
//
//	executortest.Run(t, func(t *testing.T) executor.Executor {
//		ex, err := local.New(local.Config{StateDir: t.TempDir(), Grace: 300 * time.Millisecond})
//		if err != nil {
//			t.Fatal(err)
//		}
//		return ex
//	})
//
// and every contract of docs/architecture.md's "How to add an executor" is
// checked against real processes: Read, Kill and OwnerOf never block behind
// a command; the owner is stamped on a task for life; errors are
// *executor.OwnerError, *executor.UnknownTaskError and wrapped
// executor.ErrWorkdir / executor.ErrSandbox (a missing or unenterable
// workdir named, never bash); TimedOut is set whenever the
// timer fired; Signal names a signal death; SpillPath names only a complete
// file; reads are incremental; notices come once per task; Shutdown kills
// everything; and no process of a command survives it where the executor
// promises so (the whole group always; setsid'd escapes too at a confined
// level).
//
// newExecutor is called once per subtest and must return a fresh executor
// with a short kill grace (at most a second; the suite's bounds allow for
// it). The suite shuts each executor down when its subtest ends (Shutdown
// must be safe to call twice). Commands run with the executor's default
// level in a fresh temporary session cwd; the suite writes only there.
//
// Processes are found by a unique marker in their command line
// (`sleep 300.<n>`) in the local /proc, which sees into nested pid
// namespaces too; an executor running commands elsewhere passes
// Options.Processes.
package executortest

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
)

// Options adjusts the suite for executors that need it.
type Options struct {
	// Processes lists the live (not zombie) processes whose command line
	// contains marker, on the machine the executor runs commands on.
	// Nil scans the local /proc.
	Processes func(marker string) []string
	// Kill kills the processes whose command line contains marker (the
	// suite's cleanup of what an unconfined level let escape). Nil kills
	// local processes.
	Kill func(marker string)
	// Unenterable returns a directory below the session cwd that the
	// executor's commands may not enter (for an executor whose commands
	// run as another user or on another machine). Nil makes a local
	// mode-000 directory, and when the test runs as root, runs that check
	// in a copy of the test process as uid 65534 (root enters anything).
	Unenterable func(t *testing.T, cwd string) string
}

// Run runs the whole suite with default Options.
func Run(t *testing.T, newExecutor func(t *testing.T) executor.Executor) {
	RunOptions(t, Options{}, newExecutor)
}

// RunOptions runs the whole suite.
func RunOptions(t *testing.T, opts Options, newExecutor func(t *testing.T) executor.Executor) {
	if opts.Processes == nil {
		opts.Processes = Processes
	}
	if opts.Kill == nil {
		opts.Kill = killMarked
	}
	s := &suite{opts: opts, newExecutor: newExecutor}
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, h *harness)
	}{
		{"Resolve", testResolve},
		{"RunResults", testRunResults},
		{"RunWorkdir", testRunWorkdir},
		{"WorkdirErrors", testWorkdirErrors},
		{"WorkdirUnenterable", testWorkdirUnenterable},
		{"RunOtherErrors", testRunOtherErrors},
		{"NoTerminalNoStdin", testNoTerminalNoStdin},
		{"Environment", testEnvironment},
		{"Observer", testObserver},
		{"BackgroundDoesNotBlockRun", testBackgroundDoesNotBlockRun},
		{"StopPaths", testStopPaths},
		{"Spill", testSpill},
		{"EscapesAfterRun", testEscapesAfterRun},
		{"Levels", testLevels},
		{"TaskIncrementalReads", testTaskIncrementalReads},
		{"TaskOutputUnreadAtExit", testTaskOutputUnreadAtExit},
		{"TaskExitIndependentOfOutput", testTaskExitIndependentOfOutput},
		{"TaskOwnership", testTaskOwnership},
		{"TaskKill", testTaskKill},
		{"TaskDoneOncePerTask", testTaskDoneOncePerTask},
		{"KillOwned", testKillOwned},
		{"NeverBlockBehindACommand", testNeverBlock},
		{"Shutdown", testShutdown},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, s.harness(t)) })
	}
}

type suite struct {
	opts        Options
	newExecutor func(t *testing.T) executor.Executor
}

// harness is one subtest's executor and helpers.
type harness struct {
	t    *testing.T
	e    executor.Executor
	opts Options
	cwd  string
	// confined: the default level is a sandbox, so escapes must die too.
	confined bool
}

func (s *suite) harness(t *testing.T) *harness {
	e := s.newExecutor(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	h := &harness{t: t, e: e, opts: s.opts, cwd: tempDir(t)}
	if c, ok := e.(executor.Confiner); ok {
		h.confined = c.DefaultLevel().Confined()
	}
	return h
}

// tempDir is t.TempDir with symlinks resolved (so it compares equal to pwd).
func tempDir(t *testing.T) string {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// resolve builds a Spec for command in the harness's session cwd.
func (h *harness) resolve(command string) executor.Spec {
	h.t.Helper()
	spec, err := h.e.Resolve(executor.Request{Command: command, SessionCwd: h.cwd})
	if err != nil {
		h.t.Fatalf("Resolve: %v", err)
	}
	return spec
}

// run runs spec in the foreground and fails the test on an error.
func (h *harness) run(spec executor.Spec) executor.Result {
	h.t.Helper()
	res, err := h.e.Run(context.Background(), spec, nil)
	if err != nil {
		h.t.Fatalf("Run(%.60q): %v", spec.Command, err)
	}
	return res
}

// start starts command in the background for owner.
func (h *harness) start(owner, command string) string {
	h.t.Helper()
	spec := h.resolve(command)
	spec.Owner = owner
	id, err := h.e.Start(spec)
	if err != nil {
		h.t.Fatalf("Start(%.60q): %v", command, err)
	}
	return id
}

// marker returns a unique `sleep` duration to find a command's processes by.
func marker() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("300.%d", binary.BigEndian.Uint32(b[:])%1000000000)
}

// requireGone fails unless no process with marker in its command line is
// alive within 5 s (the kill was sent; a loaded machine may need a moment).
func (h *harness) requireGone(what, marker string) {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := h.opts.Processes(marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: processes survived: %v", what, left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// requireAlive fails unless a process with marker is alive within 10 s.
func (h *harness) requireAlive(what, marker string) {
	h.t.Helper()
	h.eventually(10*time.Second, what+" to be running", func() bool { return len(h.opts.Processes(marker)) > 0 })
}

// eventually polls cond (which must not block) until it holds or d passes.
func (h *harness) eventually(d time.Duration, what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readUntil reads task id as caller until the accumulated output contains
// want (and, when final, the task has finished); it returns the output and
// the last ReadResult.
func (h *harness) readUntil(id, caller, want string, final bool) (string, executor.ReadResult) {
	h.t.Helper()
	var got strings.Builder
	var last executor.ReadResult
	h.eventually(20*time.Second, fmt.Sprintf("%s output %q", id, want), func() bool {
		r, err := h.e.Read(id, caller)
		if err != nil {
			h.t.Fatalf("Read(%s): %v", id, err)
		}
		got.Write(r.Output)
		last = r
		return strings.Contains(got.String(), want) && (!final || r.Status != executor.Running)
	})
	return got.String(), last
}

// doneWatcher collects task completions, in whatever order they come.
type doneWatcher struct {
	ch   chan executor.TaskDone
	seen map[string][]executor.TaskDone
}

func (h *harness) watchDone() *doneWatcher {
	w := &doneWatcher{ch: make(chan executor.TaskDone, 256), seen: map[string][]executor.TaskDone{}}
	h.t.Cleanup(h.e.OnTaskDone(func(d executor.TaskDone) { w.ch <- d }))
	return w
}

// wait returns id's completion. Call it from the test goroutine only.
func (w *doneWatcher) wait(t *testing.T, id string) executor.TaskDone {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		if d, ok := w.seen[id]; ok {
			return d[0]
		}
		select {
		case d := <-w.ch:
			w.seen[d.ID] = append(w.seen[d.ID], d)
		case <-timeout:
			t.Fatalf("no completion for %s", id)
		}
	}
}

// mkfifo makes a named pipe in the session cwd.
func (h *harness) mkfifo() string {
	h.t.Helper()
	path := filepath.Join(h.cwd, "fifo-"+marker())
	if err := mkfifo(path); err != nil {
		h.t.Fatal(err)
	}
	return path
}

// Processes scans the local /proc for live (not zombie) processes whose
// command line holds marker, as "pid: command line" lines. It sees into
// nested pid namespaces too. It is the default Options.Processes.
func Processes(marker string) []string {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var out []string
	for _, dir := range dirs {
		cmdline, err := os.ReadFile(dir + "/cmdline")
		if err != nil || !strings.Contains(string(cmdline), marker) {
			continue
		}
		stat, err := os.ReadFile(dir + "/stat")
		if err != nil {
			continue
		}
		if i := strings.LastIndexByte(string(stat), ')'); i >= 0 {
			if f := strings.Fields(string(stat[i+1:])); len(f) > 0 && (f[0] == "Z" || f[0] == "X") {
				continue
			}
		}
		out = append(out, filepath.Base(dir)+": "+strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " "))
	}
	return out
}

// killMarked kills, as cleanup, what an unconfined executor let escape.
func killMarked(marker string) {
	for _, p := range Processes(marker) {
		var pid int
		if _, err := fmt.Sscanf(p, "%d:", &pid); err == nil {
			if proc, err := os.FindProcess(pid); err == nil {
				_ = proc.Kill()
			}
		}
	}
}

func isSandboxErr(err error) bool { return errors.Is(err, executor.ErrSandbox) }

func contains(levels []executor.Level, l executor.Level) bool { return slices.Contains(levels, l) }
