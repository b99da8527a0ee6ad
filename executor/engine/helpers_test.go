package engine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/executortest"
)

// execSpawner is the smallest real Spawner: `bash -c` in a session of its
// own, exit observed without reaping (waitNoReap: waitid(WNOWAIT) on Linux,
// a kqueue on darwin). The engine's own tests use it so
// they run real processes without importing an executor.
type execSpawner struct{}

type execProcess struct {
	cmd      *exec.Cmd
	out, err *os.File
}

func (execSpawner) Spawn(c Command) (Process, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("bash", "-c", c.Spec.Command)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = c.Spec.Workdir, c.Env, outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		var pe *fs.PathError
		if errors.As(err, &pe) && pe.Op == "chdir" {
			return nil, fmt.Errorf("%w %q: %w", executor.ErrWorkdir, c.Spec.Workdir, pe.Err)
		}
		return nil, err
	}
	return &execProcess{cmd: cmd, out: outR, err: errR}, nil
}

func (p *execProcess) Stdout() io.ReadCloser { return p.out }
func (p *execProcess) Stderr() io.ReadCloser { return p.err }
func (p *execProcess) ID() string            { return fmt.Sprint("pid ", p.cmd.Process.Pid) }

func (p *execProcess) Wait() { waitNoReap(p.cmd.Process.Pid) }

func (p *execProcess) Signal(sig syscall.Signal) error { return signalGroup(p.cmd.Process.Pid, sig) }

func (p *execProcess) Release() Exit {
	_ = p.cmd.Wait()
	ws := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return Exit{Code: -1, Signal: unix.SignalName(ws.Signal())}
	}
	return Exit{Code: ws.ExitStatus()}
}

// newTestExecutor returns an Engine on execSpawner with a private StateDir
// and a short grace, shut down when the test ends.
func newTestExecutor(t *testing.T, cfg Config) *Engine {
	t.Helper()
	if cfg.StateDir == "" {
		cfg.StateDir = t.TempDir()
	}
	if cfg.Grace == 0 {
		cfg.Grace = 300 * time.Millisecond
	}
	e, err := New(execSpawner{}, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	executortest.ShutDownAtEnd(t, e, 10*time.Second)
	return e
}

// resolve builds a Spec for command in a fresh temporary workdir.
func resolve(t *testing.T, e *Engine, command string) executor.Spec {
	t.Helper()
	return executortest.MustResolve(t, e, command)
}

// run runs spec in the foreground and fails the test on an error.
func run(t *testing.T, e *Engine, spec executor.Spec) executor.Result {
	t.Helper()
	return executortest.MustRun(t, e, spec)
}

// spillFiles lists the regular files under dir/spill.
func spillFiles(t *testing.T, stateDir string) []string {
	t.Helper()
	var files []string
	_ = filepath.WalkDir(filepath.Join(stateDir, "spill"), func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, path)
		}
		return nil
	})
	return files
}
