package local

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

func TestRunResults(t *testing.T) {
	e := newTestExecutor(t, Config{})
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
		{name: "arguments after the script", command: `set -- a b; echo "$#$1$2"`, stdout: "2ab\n"},
		{name: "status of the last command", command: "false", code: 1},
		{name: "signal death", command: "kill -KILL $$", code: -1, signal: "SIGKILL"},
		{name: "term death", command: "kill -TERM $$", code: -1, signal: "SIGTERM"},
		{name: "stdin given", command: "cat; echo", stdin: []byte("fed"), stdout: "fed\n"},
		{name: "large stdin", command: "wc -c", stdin: bytes.Repeat([]byte("y"), 300<<10), stdout: fmt.Sprintf("%d\n", 300<<10)},
		{name: "stdin unread", command: "exit 4", stdin: bytes.Repeat([]byte("y"), 300<<10), code: 4},
		{name: "300 KiB script", command: long + `echo "$0 $LINENO"; exit 7`, stdout: "bash 2\n", code: 7},
		{name: "300 KiB script closes its fd", command: long + `ls /proc/self/fd/3 2>/dev/null || echo closed`, stdout: "closed\n"},
		{name: "300 KiB script syntax error", command: long + "if then", code: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := resolve(t, e, tc.command)
			spec.Stdin = tc.stdin
			res := run(t, e, spec)
			if string(res.Stdout) != tc.stdout || res.ExitCode != tc.code || res.Signal != tc.signal {
				t.Errorf("got stdout %q code %d signal %q; want %q %d %q (stderr %q)",
					res.Stdout, res.ExitCode, res.Signal, tc.stdout, tc.code, tc.signal, res.Stderr)
			}
			if tc.stderr != "" && string(res.Stderr) != tc.stderr {
				t.Errorf("stderr %q, want %q", res.Stderr, tc.stderr)
			}
			if len(res.Combined) != len(res.Stdout)+len(res.Stderr) || res.TimedOut || res.Truncated() || res.SpillPath != "" {
				t.Errorf("combined %q timedOut %v dropped %d spill %q", res.Combined, res.TimedOut, res.Dropped, res.SpillPath)
			}
		})
	}
}

func TestRunWorkdir(t *testing.T) {
	e := newTestExecutor(t, Config{})
	spec := resolve(t, e, "pwd")
	res := run(t, e, spec)
	if got := strings.TrimSpace(string(res.Stdout)); got != spec.Workdir {
		t.Errorf("pwd = %q, want %q", got, spec.Workdir)
	}
}

func TestRunDoesNotWaitForBackgroundChildren(t *testing.T) {
	e := newTestExecutor(t, Config{Grace: 5 * time.Second})
	start := time.Now()
	res := run(t, e, resolve(t, e, "echo $$; sleep 100 & echo hi"))
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("took %v: waited for the backgrounded sleep", took)
	}
	if !strings.HasSuffix(string(res.Stdout), "\nhi\n") || res.ExitCode != 0 {
		t.Errorf("got %q exit %d", res.Stdout, res.ExitCode)
	}
	requireNoSurvivors(t, firstLinePID(t, res.Stdout))
}

func TestRunLeftoversWithoutPipesAreKilled(t *testing.T) {
	e := newTestExecutor(t, Config{})
	res := run(t, e, resolve(t, e, "echo $$; trap '' TERM; sleep 100 >/dev/null 2>&1 &"))
	requireNoSurvivors(t, firstLinePID(t, res.Stdout))
}

// TestStopPaths covers timeout and cancel: both go through TERM to the
// group, the grace period, KILL to the group. Each command prints its pid
// once its traps are set; a cancel happens on that first output.
func TestStopPaths(t *testing.T) {
	const timeout, grace = time.Second, 300 * time.Millisecond
	e := newTestExecutor(t, Config{Grace: grace})
	tests := []struct {
		name     string
		command  string
		cancel   bool
		timedOut bool
		code     int
		signal   string
	}{
		{name: "timeout, TERM ignored", command: "trap '' TERM; echo $$; sleep 600", timedOut: true, code: -1, signal: "SIGKILL"},
		{name: "timeout, TERM ignored, waiting on a job", command: "trap '' TERM; sleep 600 & echo $$; wait", timedOut: true, code: -1, signal: "SIGKILL"},
		{name: "timeout, TERM obeyed", command: "echo $$; sleep 600; echo after", timedOut: true, code: -1, signal: "SIGTERM"},
		{name: "timeout, trapped and exit 0", command: "trap 'exit 0' TERM; sleep 600 & echo $$; wait", timedOut: true, code: 0},
		{name: "cancel, TERM ignored", command: "trap '' TERM; sleep 600 & echo $$; wait", cancel: true, code: -1, signal: "SIGKILL"},
		{name: "cancel, TERM obeyed", command: "sleep 600 & echo $$; wait", cancel: true, code: -1, signal: "SIGTERM"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := resolve(t, e, tc.command)
			spec.Timeout = timeout
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var observe func(executor.Chunk)
			if tc.cancel {
				spec.Timeout = time.Minute
				observe = func(executor.Chunk) { cancel() }
			}
			start := time.Now()
			res, err := e.Run(ctx, spec, observe)
			if err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); !tc.cancel && took > timeout+grace+time.Second {
				t.Errorf("took %v, want under %v", took, timeout+grace+time.Second)
			}
			if res.TimedOut != tc.timedOut || res.ExitCode != tc.code || res.Signal != tc.signal {
				t.Errorf("timedOut %v code %d signal %q; want %v %d %q", res.TimedOut, res.ExitCode, res.Signal, tc.timedOut, tc.code, tc.signal)
			}
			if strings.Contains(string(res.Stdout), "after") {
				t.Errorf("command went on after the kill: %q", res.Stdout)
			}
			requireNoSurvivors(t, firstLinePID(t, res.Stdout))
		})
	}
}

func TestRunEnvironment(t *testing.T) {
	t.Setenv("DSH_TEST_API_KEY", "k1")
	t.Setenv("DSH_TEST_PLAIN", "plain")
	t.Setenv("DSH_TEST_ALLOWED_TOKEN", "allowed")
	t.Setenv("DSH_TEST_ALLOWED_LEAK", "has-the-daemon-key-inside")
	t.Setenv("DSH_TEST_URL", "https://user:pw@example.com/x")
	t.Setenv("TERM", "xterm-256color")
	e := newTestExecutor(t, Config{
		AllowEnv:     []string{"DSH_TEST_ALLOWED_TOKEN", "DSH_TEST_ALLOWED_LEAK"},
		SecretValues: []string{"the-daemon-key"},
	})
	spec := resolve(t, e, "env")
	spec.Env = map[string]string{"HOOK_TOKEN": "from-hook", "PAGER": "less"}
	res := run(t, e, spec)
	got := map[string]string{}
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			got[k] = v
		}
	}
	want := map[string]string{
		"DSH_TEST_PLAIN": "plain", "DSH_TEST_ALLOWED_TOKEN": "allowed", "HOOK_TOKEN": "from-hook",
		"PAGER": "less", "GIT_PAGER": "cat", "GH_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "GIT_EDITOR": "true",
		"NO_COLOR": "1", "TERM": "dumb", "CI": "1", "DEBIAN_FRONTEND": "noninteractive", "DSH_ACP": "1",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s=%q, want %q", k, got[k], v)
		}
	}
	for _, k := range []string{"DSH_TEST_API_KEY", "DSH_TEST_ALLOWED_LEAK", "DSH_TEST_URL"} {
		if v, ok := got[k]; ok {
			t.Errorf("%s=%q leaked", k, v)
		}
	}
}

func TestRunWorkdirErrors(t *testing.T) {
	e := newTestExecutor(t, Config{})
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dir  string
		also error
	}{
		{dir: filepath.Join(t.TempDir(), "missing"), also: fs.ErrNotExist},
		{dir: file},
		{dir: "relative/dir"},
	}
	for _, tc := range tests {
		t.Run(tc.dir, func(t *testing.T) {
			spec := executor.Spec{Command: "true", Workdir: tc.dir, Timeout: time.Second}
			_, runErr := e.Run(context.Background(), spec, nil)
			_, startErr := e.Start(spec)
			for _, err := range []error{runErr, startErr} {
				if !errors.Is(err, executor.ErrWorkdir) || !strings.Contains(err.Error(), tc.dir) {
					t.Errorf("error %v: want ErrWorkdir naming %q", err, tc.dir)
				}
				if tc.also != nil && !errors.Is(err, tc.also) {
					t.Errorf("error %v: want also %v", err, tc.also)
				}
			}
		})
	}
	id, err := e.Start(resolve(t, e, "true"))
	if err != nil || id != "bash-1" {
		t.Errorf("first task after failed starts: %q, %v; want bash-1", id, err)
	}
}

func TestRunOtherErrors(t *testing.T) {
	e := newTestExecutor(t, Config{})
	spec := resolve(t, e, "true")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Run(ctx, spec, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: %v", err)
	}
	spec.Timeout = -time.Second
	if _, err := e.Run(context.Background(), spec, nil); err == nil {
		t.Error("negative timeout: no error")
	}
	spec.Timeout = time.Second
	spec.Env = map[string]string{"A=B": "x"}
	if _, err := e.Run(context.Background(), spec, nil); err == nil {
		t.Error("invalid env name: no error")
	}
}

func TestRunObserver(t *testing.T) {
	e := newTestExecutor(t, Config{})
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
	res, err := e.Run(context.Background(), resolve(t, e, "for i in $(seq 1 2000); do echo line $i; done; echo err >&2"), observe)
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

// TestRunSlowObserver blocks the observer until the command has finished on
// its own: the command must not wait for it, and what the observer missed
// is counted.
func TestRunSlowObserver(t *testing.T) {
	e := newTestExecutor(t, Config{})
	marker := filepath.Join(t.TempDir(), "done")
	const total = 8 << 20
	release := make(chan struct{})
	var got, dropped int64
	observe := func(c executor.Chunk) {
		<-release
		got += int64(len(c.Data))
		dropped += c.Dropped
	}
	spec := resolve(t, e, fmt.Sprintf("head -c %d /dev/zero; touch %s", total, marker))
	spec.Timeout = time.Minute
	done := make(chan executor.Result)
	go func() {
		res, err := e.Run(context.Background(), spec, observe)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	eventually(t, 30*time.Second, "the command to finish while the observer blocks", func() bool {
		_, err := os.Stat(marker)
		return err == nil
	})
	close(release)
	res := <-done
	if got+dropped != total || dropped == 0 {
		t.Errorf("observed %d + dropped %d, want %d with some dropped", got, dropped, total)
	}
	if res.Dropped+int64(len(res.Combined)) != total {
		t.Errorf("capture saw %d bytes, want %d", res.Dropped+int64(len(res.Combined)), total)
	}
}

func TestRunConcurrent(t *testing.T) {
	e := newTestExecutor(t, Config{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			res, err := e.Run(context.Background(), resolve(t, e, fmt.Sprintf("echo %d", i)), nil)
			if err != nil || string(res.Stdout) != fmt.Sprintf("%d\n", i) {
				t.Errorf("run %d: %q %v", i, res.Stdout, err)
			}
		})
	}
	wg.Wait()
}
