package ssh

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/sshdtest"
)

// remoteSandboxRoot checks the host's bubblewrap runs (skipping with the
// reason, or failing under CI=true) and returns a fresh directory for the
// test's tree under /var/tmp (not /tmp: a sandbox's /tmp is private),
// removed at the end.
func remoteSandboxRoot(t *testing.T, prefix string) string {
	t.Helper()
	if err := exec.Command("bwrap", "--ro-bind", "/", "/", "true").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and bubblewrap cannot run here: %v", err)
		}
		t.Skipf("bubblewrap cannot run here: %v", err)
	}
	root, err := os.MkdirTemp("/var/tmp", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	return root
}

// TestRemoteLevels: on a host with bubblewrap the confined levels confine
// remote commands as they do local ones — the kernel refuses a write
// outside the workspace, the workspace is writable at workspace and not at
// read-only, a credential where the host's DOCKER_CONFIG points is hidden,
// git's config stays read-only — while off runs as before.
func TestRemoteLevels(t *testing.T) {
	root := remoteSandboxRoot(t, "dsh-ssh-levels-")
	ws, sibling, docker := filepath.Join(root, "ws"), filepath.Join(root, "sibling"), filepath.Join(root, "docker")
	for _, d := range []string{filepath.Join(ws, ".git"), sibling, docker} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := "secret-" + filepath.Base(root)
	for p, c := range map[string]string{filepath.Join(docker, "config.json"): secret, filepath.Join(ws, ".git", "config"): "[core]\n"} {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := sshdtest.StartWith(t, sshdtest.Options{SetEnv: []string{"DOCKER_CONFIG=" + docker}})
	e := newTestExecutor(t, testConfig(t, srv))
	run := func(level executor.Level, cmd string) executor.Result {
		t.Helper()
		return runIn(t, e, ws, level, nil, cmd)
	}
	res := run(executor.LevelWorkspace, `touch ../sibling/out; touch in && echo wrote; cat "$DOCKER_CONFIG/config.json"; echo evil >> .git/config; true`)
	out := string(res.Combined)
	if !strings.Contains(out, "Read-only file system") || !strings.Contains(out, "wrote") || strings.Contains(out, secret) {
		t.Errorf("workspace: %q", out)
	}
	if _, err := os.Stat(filepath.Join(sibling, "out")); err == nil {
		t.Error("workspace: a write outside the workspace reached the host")
	}
	if got, _ := os.ReadFile(filepath.Join(ws, ".git", "config")); string(got) != "[core]\n" {
		t.Errorf("workspace: .git/config is now %q", got)
	}
	if res := run(executor.LevelReadOnly, `touch in-ro 2>&1; true`); !strings.Contains(string(res.Combined), "Read-only file system") {
		t.Errorf("read-only: %q", res.Combined)
	}
	if res := run(executor.LevelOff, `touch ../sibling/off && cat "$DOCKER_CONFIG/config.json"`); !strings.Contains(string(res.Combined), secret) {
		t.Errorf("off: %q", res.Combined)
	}
	// The command runs in the shell's own bash, named bash, not in one the
	// workspace planted on the command's PATH.
	bin := filepath.Join(ws, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "bash"), []byte("#!/bin/sh\necho planted\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	spec, err := e.Resolve(executor.Request{Command: `echo "real $0"`, SessionCwd: ws, Level: executor.LevelWorkspace,
		Env: map[string]string{"PATH": bin + ":/usr/local/bin:/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := e.Run(context.Background(), spec, nil); err != nil || string(res.Stdout) != "real bash\n" {
		t.Errorf("a bash planted on PATH: got %q (stderr %q), %v; want the shell's own, named bash", res.Stdout, res.Stderr, err)
	}
	if e.Unavailable() != nil || len(e.Levels()) != 4 {
		t.Errorf("after the probe: unavailable %v, levels %v", e.Unavailable(), e.Levels())
	}
}
