package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/local"
	"github.com/dsh-acp/dsh-acp/executor/sandbox"
	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/eventually"
	"github.com/dsh-acp/dsh-acp/internal/mcp"
	"github.com/dsh-acp/dsh-acp/internal/permission"
	"go.uber.org/zap"
)

// daemonChildEnv makes the test binary serve as the daemon (run with no
// arguments) in TestInitializeBuildsNoExecutorNorTables, then report
// on stderr what start-up built.
const daemonChildEnv = "DSH_TEST_DAEMON_CHILD"

// startDaemon runs this test binary as the daemon, with a private state
// directory (returned) and no model.
func startDaemon(t *testing.T) (*acptest.Agent, string) {
	state := t.TempDir()
	a := acptest.Start(t, os.Args[0], []string{"-test.run=^TestInitializeBuildsNoExecutorNorTables$"},
		[]string{daemonChildEnv + "=1", "DSH_STATE_DIR=" + state, "DSH_SANDBOX=off", "DSH_LOG_LEVEL=error",
			"DSH_API_KEY=", "DEEPSEEK_API_KEY="})
	return a, state
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func initialize(t *testing.T, a *acptest.Agent) {
	t.Helper()
	var res json.RawMessage
	if err := a.Call(testCtx(t), "initialize", map[string]any{"protocolVersion": 1}, &res); err != nil {
		t.Fatalf("initialize: %v", err)
	}
}

func newSession(t *testing.T, a *acptest.Agent) {
	t.Helper()
	var res struct {
		SessionID string `json:"sessionId"`
	}
	if err := a.Call(testCtx(t), "session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{}}, &res); err != nil || res.SessionID == "" {
		t.Fatalf("session/new: %v %+v", err, res)
	}
}

// The daemon answers initialize before it builds the executor (whose
// engine makes <state>/spill) or the permission judge's tables; the first
// session/new starts the executor's build (in the background, once its
// reply is out: the reply does not wait for it). The daemon is this test binary running
// run(), so the permission package's counter can be read at exit.
func TestInitializeBuildsNoExecutorNorTables(t *testing.T) {
	if os.Getenv(daemonChildEnv) == "1" {
		code := run(nil)
		fmt.Fprintf(os.Stderr, "\npermission tables built: %d\n", permission.TablesBuilt())
		os.Exit(code)
	}
	exited := func(t *testing.T, a *acptest.Agent) string {
		if err := a.CloseStdin(); err != nil {
			t.Fatal(err)
		}
		if err := a.Wait(testCtx(t)); err != nil {
			t.Fatalf("daemon exit: %v\n%s", err, a.Stderr())
		}
		return a.Stderr()
	}

	t.Run("initialize", func(t *testing.T) {
		a, state := startDaemon(t)
		initialize(t, a)
		spill := filepath.Join(state, "spill")
		if _, err := os.Stat(spill); !os.IsNotExist(err) {
			t.Errorf("after initialize, %s: %v; want it not made yet (the executor built)", spill, err)
		}
		if out := exited(t, a); !strings.Contains(out, "\npermission tables built: 0\n") {
			t.Errorf("permission tables were built by start-up or initialize:\n%s", out)
		}
	})
	t.Run("session/new", func(t *testing.T) {
		a, state := startDaemon(t)
		initialize(t, a)
		newSession(t, a)
		spill := filepath.Join(state, "spill")
		eventually.True(t, 20*time.Second, func() bool {
			fi, err := os.Stat(spill)
			return err == nil && fi.IsDir()
		}, "after session/new, %s was never made: the executor was not built", spill)
		exited(t, a)
	})
}

// Until the client's first message other than initialize the daemon has no
// signal handlers (os/signal starts a thread, which would delay the
// initialize reply): SIGTERM ends it by the default action, as nothing runs
// that a clean end would stop. Once that message arrived — before anything
// it starts — SIGTERM ends it cleanly, with exit 0.
func TestSignalHandlersWaitForTheFirstRequest(t *testing.T) {
	term := func(t *testing.T, a *acptest.Agent) error {
		if err := syscall.Kill(a.Pid(), syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		return a.Wait(testCtx(t))
	}
	t.Run("after initialize", func(t *testing.T) {
		a, _ := startDaemon(t)
		initialize(t, a)
		var exit *exec.ExitError
		if err := term(t, a); !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
			t.Errorf("SIGTERM after initialize: %v; want the default action (killed by SIGTERM)", err)
		}
	})
	t.Run("after session/new", func(t *testing.T) {
		a, _ := startDaemon(t)
		initialize(t, a)
		newSession(t, a)
		if err := term(t, a); err != nil {
			t.Errorf("SIGTERM after session/new: %v; want a clean exit\n%s", err, a.Stderr())
		}
	})
}

// lazyExecutor builds nothing for what needs no executor, builds once on
// first use, hands the completion callbacks registered before the build
// to the executor it builds, and is not built by a Shutdown.
func TestLazyExecutor(t *testing.T) {
	builds := 0
	state := t.TempDir()
	build := func() (localExecutor, error) {
		builds++
		return sandbox.New(sandbox.Config{Config: local.Config{StateDir: state}, Level: executor.LevelOff})
	}
	l := newLazyExecutor(build, zap.NewNop())
	done := make(chan executor.TaskDone, 1)
	unsubscribe := l.OnTaskDone(func(d executor.TaskDone) { done <- d })
	defer unsubscribe()
	if _, err := l.Read("bash-1", ""); !errors.Is(err, executor.ErrUnknownTask) {
		t.Errorf("Read before the build: %v", err)
	}
	if _, ok := l.OwnerOf("bash-1"); ok {
		t.Error("OwnerOf before the build found a task")
	}
	l.KillOwned(context.Background(), "s")
	if builds != 0 {
		t.Fatalf("%d builds before first use", builds)
	}
	if got := l.DefaultLevel(); got != executor.LevelOff || builds != 1 {
		t.Fatalf("DefaultLevel = %q after %d builds", got, builds)
	}
	spec, err := l.Resolve(executor.Request{Command: "exit 3", Workdir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	spec.Owner = "s"
	id, err := l.Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-done:
		if d.ID != id || d.ExitCode != 3 {
			t.Errorf("completion %+v, want %s exiting 3", d, id)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no completion delivered to the callback registered before the build")
	}
	if err := l.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if builds != 1 {
		t.Errorf("%d builds, want 1", builds)
	}

	never := newLazyExecutor(build, zap.NewNop())
	if err := never.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := never.Resolve(executor.Request{Command: "true"}); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("Resolve after Shutdown: %v, want ErrClosed", err)
	}
	if builds != 1 {
		t.Errorf("Shutdown of an executor never used built it (%d builds)", builds)
	}
}

// The lazy executor offers the optional interfaces the executor it stands
// for does, and no other: the layers above look for them by assertion.
func TestLazyExecutorInterfaces(t *testing.T) {
	var real any = (*sandbox.Executor)(nil)
	var lazy any = (*lazyExecutor)(nil)
	for name, has := range map[string]func(any) bool{
		"executor.Confiner": func(v any) bool { _, ok := v.(executor.Confiner); return ok },
		"executor.Remote":   func(v any) bool { _, ok := v.(executor.Remote); return ok },
		"mcp.Spiller":       func(v any) bool { _, ok := v.(mcp.Spiller); return ok },
	} {
		if has(real) != has(lazy) {
			t.Errorf("%s: the sandbox executor %v, the lazy one %v", name, has(real), has(lazy))
		}
	}
}
