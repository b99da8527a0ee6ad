// Package acptest drives an ACP agent binary over real pipes for end-to-end
// tests. Its client side is github.com/sourcegraph/jsonrpc2, a JSON-RPC
// implementation independent of the agent's own SDK, so a bug shared by the
// two sides cannot hide itself.
//
// A typical test:
//
//	bin := acptest.BuildBinary(t)
//	a := acptest.Start(t, bin, nil, []string{"DSH_STATE_DIR=" + t.TempDir()})
//	var init map[string]any
//	err := a.Call(ctx, "initialize", acptest.InitializeParams(acptest.ZedCapabilities()), &init)
//
// Start registers a cleanup that closes the agent's stdin and fails the test
// if the agent does not exit promptly.
package acptest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"testing"
)

// DaemonPackage is the package BuildBinary builds, relative to the module root.
const DaemonPackage = "./cmd/dsh-acp"

// RaceEnv names the environment variable that, set to "1", makes the builds
// race-enabled (go build -race).
const RaceEnv = "ACPTEST_RACE"

// builds caches one build per package for the life of the test process; a
// test binary is one process, so every test shares the binary.
var builds = struct {
	mu  sync.Mutex
	dir string
	m   map[string]*build
}{m: map[string]*build{}}

type build struct {
	once sync.Once
	path string
	err  error
}

// BuildBinary builds DaemonPackage once per test process and returns the
// binary's path. See BuildPackage.
func BuildBinary(t testing.TB) string {
	t.Helper()
	return BuildPackage(t, DaemonPackage)
}

// BuildPackage builds the main package pkg (a path relative to the module
// root, like "./cmd/dsh-acp") once per test process, with -race when RaceEnv
// is "1", and returns the binary's path. A failed build fails every test that
// asks for it. The binaries live in one temporary directory, which
// RemoveBuilds deletes (call it from TestMain after m.Run, if at all).
func BuildPackage(t testing.TB, pkg string) string {
	t.Helper()
	builds.mu.Lock()
	b, ok := builds.m[pkg]
	if !ok {
		b = &build{}
		builds.m[pkg] = b
	}
	builds.mu.Unlock()
	b.once.Do(func() { b.path, b.err = buildPackage(pkg) })
	if b.err != nil {
		t.Fatalf("acptest: %v", b.err)
	}
	return b.path
}

// RemoveBuilds deletes every binary BuildPackage built. Later calls to
// BuildPackage in the same process fail their tests.
func RemoveBuilds() error {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.dir == "" {
		return nil
	}
	return os.RemoveAll(builds.dir)
}

func buildDir() (string, error) {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "acptest-build-")
		if err != nil {
			return "", fmt.Errorf("create build dir: %w", err)
		}
		builds.dir = dir
	}
	return builds.dir, nil
}

func buildPackage(pkg string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	dir, err := buildDir()
	if err != nil {
		return "", err
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("find the go command: %w", err)
	}
	out := filepath.Join(dir, path.Base(pkg))
	args := []string{"build", "-o", out}
	if os.Getenv(RaceEnv) == "1" {
		args = append(args, "-race")
	}
	cmd := exec.Command(goBin, append(args, pkg)...)
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %v in %s: %w\n%s", args, root, err, msg)
	}
	return out, nil
}

// ModuleRoot returns the directory holding go.mod, searching from the working
// directory upwards (a test runs in its package's directory).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("module root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("module root: %w", err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("module root: no go.mod above the working directory")
		}
		dir = parent
	}
}
