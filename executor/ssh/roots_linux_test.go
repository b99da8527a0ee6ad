package ssh

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/sshdtest"
)

// TestRemoteAdditionalDirectories: over a real sshd and the host's
// bubblewrap, a session's additional directory is writable at workspace as
// its cwd is — the file lands on the host — with git's config inside it
// still read-only; a directory not named stays unchanged; at read-only the
// additional directory is not writable; one missing on the host is
// refused with status 126 and a line saying so, and nothing runs.
func TestRemoteAdditionalDirectories(t *testing.T) {
	root := remoteSandboxRoot(t, "dsh-ssh-roots-")
	ws, second, other := filepath.Join(root, "ws"), filepath.Join(root, "second"), filepath.Join(root, "other")
	for _, d := range []string{ws, filepath.Join(second, ".git"), other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gitConfig := filepath.Join(second, ".git", "config")
	if err := os.WriteFile(gitConfig, []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := sshdtest.Start(t)
	e := newTestExecutor(t, testConfig(t, srv))
	run := func(level executor.Level, roots []string, cmd string) executor.Result {
		t.Helper()
		return runIn(t, e, ws, level, roots, cmd)
	}
	cmd := "echo x > " + second + "/f; echo y > " + other + "/g; echo evil >> " + second + "/.git/config; true"
	res := run(executor.LevelWorkspace, []string{second}, cmd)
	if b, err := os.ReadFile(filepath.Join(second, "f")); err != nil || string(b) != "x\n" {
		t.Errorf("workspace: the write into the additional directory did not land on the host: %q, %v (output %q)", b, err, res.Combined)
	}
	if _, err := os.Stat(filepath.Join(other, "g")); !os.IsNotExist(err) {
		t.Errorf("workspace: a directory not named was written: %v", err)
	}
	if b, _ := os.ReadFile(gitConfig); string(b) != "[core]\n" {
		t.Errorf("workspace: the additional directory's .git/config is now %q", b)
	}

	run(executor.LevelReadOnly, []string{second}, "echo ro > "+second+"/ro; true")
	if _, err := os.Stat(filepath.Join(second, "ro")); !os.IsNotExist(err) {
		t.Errorf("read-only: the additional directory was written: %v", err)
	}

	missing := filepath.Join(root, "missing")
	res = run(executor.LevelWorkspace, []string{missing}, "echo ran > "+ws+"/ran")
	if res.ExitCode != 126 || !strings.Contains(string(res.Combined), "the additional directory "+missing+" does not exist on the host") {
		t.Errorf("a missing additional directory: exit %d, %q", res.ExitCode, res.Combined)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); !os.IsNotExist(err) {
		t.Errorf("the command ran despite a missing additional directory: %v", err)
	}
}
