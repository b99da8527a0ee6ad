package acp_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

// The sandbox's attack tests (issue 32): each attack runs through the real
// daemon over stdio, as root and as an unprivileged user, and is judged by
// its effect on the host — a file outside unchanged, a later real
// `git status` that did not run a plant, a secret that did not reach the
// client — never by what a card says.

// unprivilegedUID is the user the daemon drops to in the "user" runs.
const unprivilegedUID = 65534

// asUsers are the identities every attack runs as: the test's own (root
// in CI) and an ordinary user.
var asUsers = []string{"root", "user"}

// attackTree is a throwaway HOME holding the project (the session's cwd),
// a sibling outside the project, the state directory and the daemon's
// config directory (XDG_CONFIG_HOME), all owned by the daemon's user, on
// the root filesystem (under /var/tmp: /tmp is private in a sandbox).
type attackTree struct {
	root, home, cwd, sibling, state, config string
}

// attackDaemon is a daemon in auto mode with a scripted model, run as
// `as`, in its own tree.
type attackDaemon struct {
	*daemon
	model *llmtest.Server
	tree  attackTree
	as    string
}

// unprivilegedBinary is a copy of the daemon binary every user may run,
// behind a wrapper that drops to unprivilegedUID with setpriv(1).
var unprivilegedBinary = struct {
	once sync.Once
	path string
	err  error
}{}

func wrapperAsUser(t *testing.T) string {
	t.Helper()
	u := &unprivilegedBinary
	u.once.Do(func() {
		dir, err := os.MkdirTemp("/var/tmp", "dsh-e2e-bin-")
		if err != nil {
			u.err = err
			return
		}
		if err = os.Chmod(dir, 0o755); err != nil {
			u.err = err
			return
		}
		bin := filepath.Join(dir, "dsh-acp")
		if u.err = copyExec(daemonBinary(t), bin); u.err != nil {
			return
		}
		wrapper := filepath.Join(dir, "as-user")
		script := fmt.Sprintf("#!/bin/sh\nexec setpriv --reuid=%d --regid=%d --clear-groups %s \"$@\"\n", unprivilegedUID, unprivilegedUID, bin)
		u.err = os.WriteFile(wrapper, []byte(script), 0o755)
		u.path = wrapper
	})
	if u.err != nil {
		t.Fatalf("the unprivileged daemon: %v", u.err)
	}
	return u.path
}

func copyExec(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// newAttackTree makes the tree, owned by the daemon's user.
func newAttackTree(t *testing.T, as string) attackTree {
	t.Helper()
	root, err := os.MkdirTemp("/var/tmp", "dsh-e2e-attack-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	home := filepath.Join(root, "home")
	tr := attackTree{root: root, home: home, cwd: filepath.Join(home, "project"), sibling: filepath.Join(home, "sibling"),
		state: filepath.Join(home, ".local", "state", "dsh-acp"), config: filepath.Join(home, ".config")}
	for _, d := range []string{tr.cwd, tr.sibling, tr.state, tr.config} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if as == "user" {
		if err := os.Chmod(root, 0o755); err != nil {
			t.Fatal(err)
		}
		chownTree(t, home)
	}
	return tr
}

// chownTree gives dir and everything below it to the unprivileged user.
func chownTree(t *testing.T, dir string) {
	t.Helper()
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, unprivilegedUID, unprivilegedUID)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// forEachUser runs f as root and as an unprivileged user, in parallel.
// As a non-root tester only the "user" run happens (it is the tester).
func forEachUser(t *testing.T, f func(t *testing.T, as string)) {
	for _, as := range asUsers {
		t.Run(as, func(t *testing.T) {
			if os.Geteuid() != 0 && as == "root" {
				t.Skip("not root: the run as an ordinary user is this one's")
			}
			t.Parallel()
			f(t, as)
		})
	}
}

// startAttackDaemon starts the daemon as `as` in a fresh tree, in auto
// mode (every command runs unasked at the session's level), with args.
func startAttackDaemon(t *testing.T, as string, args []string, env ...string) *attackDaemon {
	t.Helper()
	needSandbox(t)
	tr := newAttackTree(t, as)
	model := llmtest.New(t)
	bin := daemonBinary(t)
	if as == "user" && os.Geteuid() == 0 {
		bin = wrapperAsUser(t)
	}
	env = append([]string{"HOME=" + tr.home, "XDG_CONFIG_HOME=" + tr.config, "DSH_MODE=auto", "GOCACHE=", "GOFLAGS="}, env...)
	d := startModelDaemon(t, bin, tr.state, model, args, env...)
	return &attackDaemon{daemon: d, model: model, tree: tr, as: as}
}

// run runs a typed `!command` in session sid and returns its terminal
// output.
func (a *attackDaemon) run(sid, cmd string) string {
	a.t.Helper()
	out, _ := a.direct(sid, cmd)
	return out
}

// sessionLevel opens a session at cwd and returns it and its sandbox
// option's current value.
func (a *attackDaemon) sessionLevel(cwd string) (string, string) {
	a.t.Helper()
	sid, opts := a.openSession(cwd)
	o := optionByID(opts, "sandbox")
	if o == nil {
		return sid, ""
	}
	return sid, o.CurrentValue
}

// mustNotExist fails when path exists on the host.
func mustNotExist(t *testing.T, path, what string) {
	t.Helper()
	if _, err := os.Lstat(path); err == nil {
		t.Errorf("%s: %s exists on the host", what, path)
	}
}

// TestE2ESandboxUnprivileged: run as an ordinary user (and as root), the
// daemon offers the sandbox: the default level is workspace, and a write
// outside the workspace is refused by the kernel — with no flag and with
// --sandbox workspace. Before issue 32 the unprivileged daemon, being
// non-dumpable, could not start bubblewrap: off by default, and every
// command refused at an explicit workspace.
func TestE2ESandboxUnprivileged(t *testing.T) {
	forEachUser(t, func(t *testing.T, as string) {
		for _, args := range [][]string{nil, {"--sandbox", "workspace"}} {
			a := startAttackDaemon(t, as, args)
			sid, level := a.sessionLevel(a.tree.cwd)
			if level != "workspace" {
				t.Errorf("as %s %v: a new session's level is %q, want workspace", as, args, level)
			}
			m := acptest.NewMarker()
			out := a.run(sid, fmt.Sprintf(`touch "$HOME/out-%s" ../sibling/out-%s; touch in-%s && echo wrote-inside`, m, m, m))
			mustNotExist(t, filepath.Join(a.tree.home, "out-"+m), "a write to HOME")
			mustNotExist(t, filepath.Join(a.tree.sibling, "out-"+m), "a write to a sibling")
			if strings.Count(out, "Read-only file system") != 2 {
				t.Errorf("as %s %v: the writes outside were not refused by the kernel: %q", as, args, out)
			}
			if _, err := os.Stat(filepath.Join(a.tree.cwd, "in-"+m)); err != nil || !strings.Contains(out, "wrote-inside") {
				t.Errorf("as %s %v: the write in the workspace failed: %q (%v)", as, args, out, err)
			}
		}
	})
}
