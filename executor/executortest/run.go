package executortest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
)

func testResolve(t *testing.T, h *harness) {
	tests := []struct {
		name string
		req  executor.Request
		dir  string
	}{
		{name: "session cwd", req: executor.Request{SessionCwd: "/work/s"}, dir: "/work/s"},
		{name: "relative to session", req: executor.Request{Workdir: "sub/../x", SessionCwd: "/work/s"}, dir: "/work/s/x"},
		{name: "absolute wins", req: executor.Request{Workdir: "/abs/", SessionCwd: "/work/s"}, dir: "/abs"},
	}
	for _, tc := range tests {
		tc.req.Command, tc.req.Owner = "cmd", "own"
		spec, err := h.e.Resolve(tc.req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if spec.Workdir != tc.dir || spec.Command != "cmd" || spec.Owner != "own" || spec.Timeout <= 0 {
			t.Errorf("%s: got %+v; want dir %q and a positive timeout", tc.name, spec, tc.dir)
		}
		if spec.Workspace != "/work/s" {
			t.Errorf("%s: workspace %q, want the session cwd", tc.name, spec.Workspace)
		}
		if !spec.Level.Valid() {
			t.Errorf("%s: level %q not filled in", tc.name, spec.Level)
		}
	}
	short, _ := h.e.Resolve(executor.Request{SessionCwd: "/", Timeout: time.Second})
	long, _ := h.e.Resolve(executor.Request{SessionCwd: "/", Timeout: 1000 * time.Hour})
	if short.Timeout != time.Second || long.Timeout <= 0 || long.Timeout > 1000*time.Hour {
		t.Errorf("timeouts: asked 1s got %v; asked 1000h got %v", short.Timeout, long.Timeout)
	}
	if _, err := h.e.Resolve(executor.Request{SessionCwd: "/", Timeout: -time.Millisecond}); err == nil {
		t.Error("negative timeout: no error")
	}
	if _, err := h.e.Resolve(executor.Request{SessionCwd: "/", Level: "bogus"}); err == nil {
		t.Error("unknown level: no error")
	}
	req := executor.Request{SessionCwd: "/", Stdin: []byte("in"), Env: map[string]string{"A": "1"}}
	spec, _ := h.e.Resolve(req)
	req.Stdin[0], req.Env["A"] = 'X', "2"
	if string(spec.Stdin) != "in" || spec.Env["A"] != "1" {
		t.Errorf("Resolve kept references to the request: %+v", spec)
	}
}

func testRunResults(t *testing.T, h *harness) {
	long := "# " + strings.Repeat("x", 300<<10) + "\n"
	tests := []struct {
		name    string
		command string
		stdin   []byte
		stdout  string
		stderr  string
		code    int
		signal  string
	}{
		{name: "exit code and streams", command: "echo out; echo err >&2; exit 3", stdout: "out\n", stderr: "err\n", code: 3},
		{name: "dollar zero", command: `echo "$0"`, stdout: "bash\n"},
		{name: "status of the last command", command: "false", code: 1},
		{name: "signal death", command: "kill -KILL $$", code: -1, signal: "SIGKILL"},
		{name: "term death", command: "kill -TERM $$", code: -1, signal: "SIGTERM"},
		{name: "stdin given", command: "cat; echo", stdin: []byte("fed"), stdout: "fed\n"},
		{name: "large stdin", command: "wc -c", stdin: bytes.Repeat([]byte("y"), 300<<10), stdout: fmt.Sprintf("%d\n", 300<<10)},
		{name: "stdin unread", command: "exit 4", stdin: bytes.Repeat([]byte("y"), 300<<10), code: 4},
		{name: "300 KiB script", command: long + `echo "$0 $LINENO"; exit 7`, stdout: "bash 2\n", code: 7},
		{name: "300 KiB script closes its fd", command: long + `ls /proc/self/fd/3 2>/dev/null || echo closed`, stdout: "closed\n"},
	}
	for _, tc := range tests {
		spec := h.resolve(tc.command)
		spec.Stdin = tc.stdin
		res := h.run(spec)
		if string(res.Stdout) != tc.stdout || res.ExitCode != tc.code || res.Signal != tc.signal {
			t.Errorf("%s: got stdout %q code %d signal %q; want %q %d %q (stderr %q)",
				tc.name, res.Stdout, res.ExitCode, res.Signal, tc.stdout, tc.code, tc.signal, res.Stderr)
		}
		if tc.stderr != "" && string(res.Stderr) != tc.stderr {
			t.Errorf("%s: stderr %q, want %q", tc.name, res.Stderr, tc.stderr)
		}
		if len(res.Combined) != len(res.Stdout)+len(res.Stderr) || res.TimedOut || res.Truncated() {
			t.Errorf("%s: combined %q timedOut %v dropped %d", tc.name, res.Combined, res.TimedOut, res.Dropped)
		}
	}
}

func testRunWorkdir(t *testing.T, h *harness) {
	sub := filepath.Join(h.cwd, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	spec, err := h.e.Resolve(executor.Request{Command: "pwd", Workdir: "sub", SessionCwd: h.cwd})
	if err != nil {
		t.Fatal(err)
	}
	res := h.run(spec)
	if got := strings.TrimSpace(string(res.Stdout)); got != sub {
		t.Errorf("pwd = %q, want %q (stderr %q)", got, sub, res.Stderr)
	}
}

func testWorkdirErrors(t *testing.T, h *harness) {
	file := filepath.Join(h.cwd, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dir  string
		also error
	}{
		{dir: filepath.Join(h.cwd, "missing"), also: fs.ErrNotExist},
		{dir: file},
		{dir: "relative/dir"},
	}
	for _, tc := range tests {
		spec := h.resolve("true")
		spec.Workdir = tc.dir
		_, runErr := h.e.Run(context.Background(), spec, nil)
		_, startErr := h.e.Start(spec)
		for _, err := range []error{runErr, startErr} {
			if !errors.Is(err, executor.ErrWorkdir) || !strings.Contains(err.Error(), tc.dir) || strings.Contains(err.Error(), "bash") {
				t.Errorf("workdir %q: error %v, want ErrWorkdir naming it (and not bash)", tc.dir, err)
			}
			if tc.also != nil && !errors.Is(err, tc.also) {
				t.Errorf("workdir %q: error %v, want also %v", tc.dir, err, tc.also)
			}
		}
	}
	if id := h.start("", "true"); id != "bash-1" {
		t.Errorf("first task after failed starts is %q, want bash-1 (a failed start created a task)", id)
	}
}

// testWorkdirUnenterable: a working directory the executor's user may not
// enter (mode 000) is an error wrapping ErrWorkdir that names the
// directory and says "permission denied" — not bash, which never started.
// Root may enter any directory, so as root the check runs in a copy of the
// test process as an unprivileged user (see asUnprivileged), unless
// Options.Unenterable provides the directory.
func testWorkdirUnenterable(t *testing.T, h *harness) {
	var dir string
	if h.opts.Unenterable != nil {
		dir = h.opts.Unenterable(t, h.cwd)
	} else {
		if asUnprivileged(t) {
			return
		}
		dir = filepath.Join(h.cwd, "locked")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(dir, 0o700) }) // so the temp dir can be removed
	}
	spec := h.resolve("true")
	spec.Workdir = dir
	_, runErr := h.e.Run(context.Background(), spec, nil)
	_, startErr := h.e.Start(spec)
	for what, err := range map[string]error{"Run": runErr, "Start": startErr} {
		if !errors.Is(err, executor.ErrWorkdir) || !errors.Is(err, fs.ErrPermission) ||
			!strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "permission denied") || strings.Contains(err.Error(), "bash") {
			t.Errorf("%s in a mode-000 workdir: error %v, want ErrWorkdir naming %s and \"permission denied\"", what, err, dir)
		}
	}
	if id := h.start("", "true"); id != "bash-1" {
		t.Errorf("first task after failed starts is %q, want bash-1 (a failed start created a task)", id)
	}
}

func testRunOtherErrors(t *testing.T, h *harness) {
	spec := h.resolve("true")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.e.Run(ctx, spec, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: %v", err)
	}
	spec.Timeout = -time.Second
	if _, err := h.e.Run(context.Background(), spec, nil); err == nil {
		t.Error("negative timeout: no error")
	}
	spec.Timeout = time.Second
	spec.Env = map[string]string{"A=B": "x"}
	if _, err := h.e.Run(context.Background(), spec, nil); err == nil {
		t.Error("invalid env name: no error")
	}
}

func testNoTerminalNoStdin(t *testing.T, h *harness) {
	start := time.Now()
	res := h.run(h.resolve(`cat; read -r x; echo "read=$?"; (echo prompt > /dev/tty) 2>/dev/null || echo "no tty"`))
	if string(res.Stdout) != "read=1\nno tty\n" {
		t.Errorf("stdout %q: want stdin at EOF and no terminal", res.Stdout)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("took %v: something waited on a terminal or on stdin", took)
	}
}

func testEnvironment(t *testing.T, h *harness) {
	spec := h.resolve("env")
	spec.Env = map[string]string{"HOOK_VALUE": "from-hook", "PAGER": "less"}
	res := h.run(spec)
	got := map[string]string{}
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			got[k] = v
		}
	}
	want := map[string]string{
		"HOOK_VALUE": "from-hook", "PAGER": "less", "GIT_PAGER": "cat", "GH_PAGER": "cat",
		"GIT_TERMINAL_PROMPT": "0", "GIT_EDITOR": "true", "NO_COLOR": "1", "TERM": "dumb", "CI": "1",
		"DEBIAN_FRONTEND": "noninteractive", "DSH_ACP": "1",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s=%q, want %q", k, got[k], v)
		}
	}
}

func testObserver(t *testing.T, h *harness) {
	var mu sync.Mutex
	var seen bytes.Buffer
	var dropped int64
	observe := func(c executor.Chunk) {
		mu.Lock()
		defer mu.Unlock()
		if c.Stream != executor.Stdout && c.Stream != executor.Stderr {
			t.Errorf("chunk with stream %d", c.Stream)
		}
		if c.Stream == executor.Stdout {
			seen.Write(c.Data)
		}
		dropped += c.Dropped
	}
	res, err := h.e.Run(context.Background(), h.resolve("for i in $(seq 1 2000); do echo line $i; done; echo err >&2"), observe)
	if err != nil {
		t.Fatal(err)
	}
	// Run returns after the last chunk: nothing may arrive later.
	mu.Lock()
	defer mu.Unlock()
	if dropped != 0 || !bytes.Equal(seen.Bytes(), res.Stdout) {
		t.Errorf("observed %d bytes (dropped %d), stdout has %d", seen.Len(), dropped, len(res.Stdout))
	}
}

func testBackgroundDoesNotBlockRun(t *testing.T, h *harness) {
	m := marker()
	start := time.Now()
	res := h.run(h.resolve("sleep " + m + " & echo hi"))
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v: waited for the backgrounded sleep", took)
	}
	if string(res.Stdout) != "hi\n" || res.ExitCode != 0 {
		t.Errorf("got %q exit %d", res.Stdout, res.ExitCode)
	}
	h.requireGone("the backgrounded sleep after Run", m)

	m = marker()
	h.run(h.resolve("trap '' TERM; sleep " + m + " >/dev/null 2>&1 &"))
	h.requireGone("a TERM-ignoring job without pipes after Run", m)
}

// testStopPaths covers timeout and cancel: both go through TERM to the
// group, the grace period, KILL to the group. A cancel happens on the
// command's first output, printed once its traps are set.
func testStopPaths(t *testing.T, h *harness) {
	const timeout = time.Second
	tests := []struct {
		name     string
		command  string
		cancel   bool
		timedOut bool
		code     int
		signal   string
	}{
		{name: "timeout, TERM ignored", command: "trap '' TERM; echo ready; sleep @M@", timedOut: true, code: -1, signal: "SIGKILL"},
		{name: "timeout, TERM ignored, waiting on a job", command: "trap '' TERM; sleep @M@ & echo ready; wait", timedOut: true, code: -1, signal: "SIGKILL"},
		{name: "timeout, TERM obeyed", command: "echo ready; sleep @M@; echo after", timedOut: true, code: -1, signal: "SIGTERM"},
		{name: "timeout, trapped and exit 0", command: "trap 'exit 0' TERM; sleep @M@ & echo ready; wait", timedOut: true, code: 0},
		{name: "cancel, TERM ignored", command: "trap '' TERM; sleep @M@ & echo ready; wait", cancel: true, code: -1, signal: "SIGKILL"},
		{name: "cancel, TERM obeyed", command: "sleep @M@ & echo ready; wait", cancel: true, code: -1, signal: "SIGTERM"},
	}
	for _, tc := range tests {
		m := marker()
		spec := h.resolve(strings.ReplaceAll(tc.command, "@M@", m))
		spec.Timeout = timeout
		ctx, cancel := context.WithCancel(context.Background())
		var observe func(executor.Chunk)
		if tc.cancel {
			spec.Timeout = time.Minute
			observe = func(executor.Chunk) { cancel() }
		}
		start := time.Now()
		res, err := h.e.Run(ctx, spec, observe)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if took := time.Since(start); took > timeout+5*time.Second {
			t.Errorf("%s: took %v", tc.name, took)
		}
		if res.TimedOut != tc.timedOut || res.ExitCode != tc.code || res.Signal != tc.signal {
			t.Errorf("%s: timedOut %v code %d signal %q; want %v %d %q (stderr %q)", tc.name, res.TimedOut, res.ExitCode, res.Signal, tc.timedOut, tc.code, tc.signal, res.Stderr)
		}
		if strings.Contains(string(res.Stdout), "after") {
			t.Errorf("%s: command went on after the kill: %q", tc.name, res.Stdout)
		}
		h.requireGone(tc.name, m)
	}
}

// testSpill checks SpillPath's promise: whenever output was dropped a file
// is named, and a named file holds the complete output.
func testSpill(t *testing.T, h *harness) {
	const lines = 400000 // about 2.7 MB: past any sane capture bound
	res := h.run(h.resolve(fmt.Sprintf("seq 1 %d", lines)))
	want := seqOutput(lines)
	if int64(len(res.Combined))+res.Dropped != int64(len(want)) || !bytes.HasSuffix(want, res.Stdout) {
		t.Fatalf("captured %d + dropped %d bytes, want %d with the tail kept", len(res.Combined), res.Dropped, len(want))
	}
	if res.Dropped > 0 && res.SpillPath == "" {
		t.Error("output was dropped but no spill file is named")
	}
	if res.SpillPath != "" {
		got, err := os.ReadFile(res.SpillPath)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("spill %s: %d bytes (%v), want the complete %d", res.SpillPath, len(got), err, len(want))
		}
	}
	// The same for a background task.
	w := h.watchDone()
	id := h.start("s", fmt.Sprintf("seq 1 %d", lines))
	w.wait(t, id)
	r, err := h.e.Read(id, "s")
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(r.Output))+r.Lost != int64(len(want)) {
		t.Errorf("task read %d + lost %d, want %d", len(r.Output), r.Lost, len(want))
	}
	if r.Lost > 0 && r.SpillPath == "" {
		t.Error("task output was lost but no spill file is named")
	}
	if r.SpillPath != "" {
		if got, err := os.ReadFile(r.SpillPath); err != nil || !bytes.Equal(got, want) {
			t.Errorf("task spill: %d bytes (%v), want %d", len(got), err, len(want))
		}
	}
}

func seqOutput(n int) []byte {
	var b bytes.Buffer
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	return b.Bytes()
}

// testEscapesAfterRun: a job that leaves the group with setsid survives a
// plain executor (the documented limit; the suite cleans it up) and must
// not survive a confined level. A nohup'd job stays in the group and dies
// either way.
func testEscapesAfterRun(t *testing.T, h *harness) {
	escaped, nohup := marker(), marker()
	res := h.run(h.resolve(fmt.Sprintf("(setsid sleep %s &); nohup sleep %s >/dev/null 2>&1 & echo started", escaped, nohup)))
	if string(res.Stdout) != "started\n" {
		t.Fatalf("stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	h.requireGone("a nohup'd job after Run", nohup)
	if h.confined {
		h.requireGone("a setsid'd job after Run at a confined level", escaped)
	} else {
		t.Cleanup(func() { h.opts.Kill(escaped) })
	}
}

// testLevels checks the Confiner contract: the default is offered, every
// offered level runs, and a level not offered is refused before anything
// runs with an error wrapping ErrSandbox (fail closed).
func testLevels(t *testing.T, h *harness) {
	c, ok := h.e.(executor.Confiner)
	if !ok {
		t.Skip("the executor does not implement executor.Confiner")
	}
	levels := c.Levels()
	if !contains(levels, c.DefaultLevel()) {
		t.Errorf("default level %q is not among the offered %v", c.DefaultLevel(), levels)
	}
	for _, l := range executor.AllLevels() {
		spec := h.resolve("echo ran > ran-" + string(l) + " 2>/dev/null; echo ok")
		spec.Level = l
		res, err := h.e.Run(context.Background(), spec, nil)
		_, startErr := h.e.Start(spec)
		if contains(levels, l) {
			if err != nil || string(res.Stdout) != "ok\n" || startErr != nil {
				t.Errorf("offered level %s: Run %q %v, Start %v", l, res.Stdout, err, startErr)
			}
			continue
		}
		if !isSandboxErr(err) || !isSandboxErr(startErr) {
			t.Errorf("level %s not offered: Run %v, Start %v; want ErrSandbox", l, err, startErr)
		}
		if _, statErr := os.Stat(filepath.Join(h.cwd, "ran-"+string(l))); statErr == nil {
			t.Errorf("level %s not offered, yet the command ran", l)
		}
	}
	if un := c.Unavailable(); un != nil && !isSandboxErr(un) {
		t.Errorf("Unavailable() = %v, want an error wrapping ErrSandbox", un)
	}
	if !contains(levels, executor.LevelReadOnly) && c.Unavailable() == nil {
		t.Error("no confined level is offered, yet Unavailable() gives no reason")
	}
	spec := h.resolve("true")
	spec.Level = "bogus"
	if _, err := h.e.Run(context.Background(), spec, nil); !isSandboxErr(err) {
		t.Errorf("unknown level: %v, want ErrSandbox", err)
	}
}
