//go:build linux

package acp_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/executor"
)

// TestE2ESandboxFIFOsAndLinks (issue 32, items 3 and 5), judged by effect
// through the real daemon, as root and as an ordinary user:
//   - a host process holding a FIFO under $HOME and one in the workspace
//     open for reading receives nothing a command writes to them, at the
//     default level (workspace) and at read-only;
//   - a file outside the workspace (a package store) hard-linked into it
//     keeps its bytes after `>>`, `sed -i` and `truncate` through the
//     links, at workspace and at workspace-network, while the workspace's
//     names hold what was written.
//
// The control (level off) shows each check can fail: the FIFOs receive the
// bytes and the store changes.
func TestE2ESandboxFIFOsAndLinks(t *testing.T) {
	forEachUser(t, func(t *testing.T, as string) {
		a := startAttackDaemon(t, as, nil)
		ws := a.tree.cwd
		for _, level := range []executor.Level{executor.LevelOff, executor.LevelReadOnly, executor.LevelWorkspace, executor.LevelWorkspaceNetwork} {
			sid, _ := a.sessionLevel(ws)
			a.setSandbox(sid, level)
			held := level != executor.LevelOff
			if level != executor.LevelWorkspaceNetwork { // the network is open there: FIFOs are not its concern
				got := a.fifoWrites(t, sid, filepath.Join(a.tree.home, "host.fifo"), filepath.Join(ws, "ws.fifo"))
				if held && got != "" {
					t.Errorf("as %s at %s: a host FIFO reader received %q", as, level, got)
				}
				if !held && got == "" {
					t.Errorf("as %s at off (the control): the FIFO readers received nothing: the check cannot fail", as)
				}
			}
			if level == executor.LevelReadOnly {
				continue // nothing in the workspace is writable
			}
			store, changed := a.linkWrites(t, sid)
			if held && store != "original\n" {
				t.Errorf("as %s at %s: the store outside the workspace is now %q", as, level, store)
			}
			if held && !changed {
				t.Errorf("as %s at %s: the workspace's names do not hold what was written", as, level)
			}
			if !held && store == "original\n" {
				t.Errorf("as %s at off (the control): the store is unchanged: the check cannot fail", as)
			}
		}
	})
}

// fifoWrites makes a FIFO at each path, holds each open for reading as a
// host process would, has session sid write to them, and returns what
// arrived.
func (a *attackDaemon) fifoWrites(t *testing.T, sid string, paths ...string) string {
	t.Helper()
	var fds []int
	for _, p := range paths {
		os.Remove(p)
		if err := unix.Mkfifo(p, 0o666); err != nil {
			t.Fatal(err)
		}
		if a.as == "user" {
			if err := os.Lchown(p, unprivilegedUID, unprivilegedUID); err != nil {
				t.Fatal(err)
			}
		}
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		fds = append(fds, fd)
	}
	cmd := ""
	for _, p := range paths {
		cmd += "echo leak > " + p + "; exec 3<>" + p + " && echo leak >&3; exec 3>&-; "
	}
	a.run(sid, cmd+"true")
	got := ""
	for i, fd := range fds {
		buf := make([]byte, 4096)
		n, err := unix.Read(fd, buf)
		if err != nil && !errors.Is(err, unix.EAGAIN) {
			t.Fatal(err)
		}
		if n > 0 {
			got += string(buf[:n])
		}
		unix.Close(fd)
		os.Remove(paths[i])
	}
	return got
}

// linkWrites links a store file outside the workspace into it under three
// names, writes through each in session sid, and returns the store's
// content afterwards and whether every workspace name holds its write.
func (a *attackDaemon) linkWrites(t *testing.T, sid string) (store string, changed bool) {
	t.Helper()
	dir := filepath.Join(a.tree.home, "store")
	ws := filepath.Join(a.tree.cwd, "node_modules")
	os.RemoveAll(dir)
	os.RemoveAll(ws)
	for _, d := range []string{dir, ws} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	src := filepath.Join(dir, "pkg.js")
	if err := os.WriteFile(src, []byte("original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a.js", "b.js", "c.js"} {
		if err := os.Link(src, filepath.Join(ws, n)); err != nil {
			t.Fatal(err)
		}
	}
	if a.as == "user" {
		chownTree(t, dir)
		chownTree(t, ws)
	}
	a.run(sid, "cd node_modules && echo x >> a.js; sed -i s/original/edited/ b.js; truncate -s 3 c.js; true")
	got, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a.js": "original\nx\n", "b.js": "edited\n", "c.js": "ori"}
	changed = true
	for n, w := range want {
		if b, _ := os.ReadFile(filepath.Join(ws, n)); string(b) != w {
			changed = false
		}
	}
	return string(got), changed
}
