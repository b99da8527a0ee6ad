package sandbox

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
)

// linkWrites are the writes TestNoLinkWriteOutWithNetwork makes through
// hard links, each through a name of its own, and what that name holds
// after.
var linkWrites = []struct{ name, cmd, want string }{
	{"append.js", "echo x >> append.js", "original\nx\n"},
	{"sed.js", "sed -i s/original/edited/ sed.js", "edited\n"},
	{"truncate.js", "truncate -s 0 truncate.js", ""},
}

// TestNoLinkWriteOutWithNetwork: at workspace-network, through the real
// daemon of every kind (see daemonKinds: root; nobody non-dumpable, with
// unshare(1); nobody dumpable), a file outside the workspace hard-linked
// into it is unchanged after `echo x >>`, `sed -i` and `truncate` through
// the links, and each workspace name holds its new content; the network
// is still the host's (a host TCP listener on loopback receives the
// command's line) and a path socket in the workspace still answers (the
// links-only guard leaves sockets alone). At off the same writes reach
// the file (the check can fail).
func TestNoLinkWriteOutWithNetwork(t *testing.T) {
	requireBwrap(t)
	var u *unprivileged
	if os.Geteuid() == 0 {
		u = newUnprivileged(t)
	}
	tcp := listenTCP(t)
	for _, k := range daemonKinds() {
		t.Run(k.name, func(t *testing.T) { testLinkWrites(t, k, u, tcp) })
	}
}

func testLinkWrites(t *testing.T, k daemonKind, u *unprivileged, tcp *tcpListener) {
	wsn, off := string(executor.LevelWorkspaceNetwork), string(executor.LevelOff)
	state, home, cwd, outside := t.TempDir(), testHome(t), tempDir(t), tempDir(t)
	if k.nobody {
		n := newMarker()
		state, home, cwd, outside = u.own("state-"+n), u.own("home-"+n), u.own("cwd-"+n), u.own("outside-"+n)
	}
	stores := map[string]string{}
	for _, level := range []string{wsn, off} {
		ws := filepath.Join(cwd, level)
		stores[level] = filepath.Join(outside, level, "store.js")
		for _, dir := range []string{ws, filepath.Dir(stores[level])} {
			mkdirOwned(t, dir, u, k.nobody)
		}
		writeOwned(t, stores[level], "original\n", u, k.nobody)
		for _, w := range linkWrites {
			if err := os.Link(stores[level], filepath.Join(ws, w.name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	sock := listenUnix(t, filepath.Join(cwd, wsn, "srv.sock"))
	if err := os.Chmod(filepath.Join(cwd, wsn, "srv.sock"), 0o777); err != nil {
		t.Fatal(err)
	}
	cmd := make([]string, 0, len(linkWrites)+2)
	for _, w := range linkWrites {
		cmd = append(cmd, w.cmd)
	}
	cmd = append(cmd, fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d && echo "sent-%s-${PWD##*/}" >&3`, tcp.port, k.name), perlDial+"srv.sock")
	env := []string{helperLevelsEnv + "=" + wsn + "," + off, helperNonDumpableEnv + "=0"}
	if k.nonDumpable {
		env[1] = helperNonDumpableEnv + "=1"
	}
	cred, binary := u.credFor(k.nobody)
	h := startHelperAs(t, cred, binary, "levels", strings.Join(cmd, "; "), state, home, cwd, env...)
	out, _ := readAll(h.out)
	if err := h.cmd.Wait(); err != nil {
		t.Fatalf("helper: %v; stderr %q", err, h.errb.String())
	}
	t.Logf("%s", out)
	if !strings.Contains(out, wsn+` exit 0: "srv.sock: ok\n"`) {
		t.Errorf("%s: the command failed, or the workspace's socket refused it", wsn)
	}
	if b, _ := os.ReadFile(stores[wsn]); string(b) != "original\n" {
		t.Errorf("%s: the file outside the workspace changed: %q", wsn, b)
	}
	for _, w := range linkWrites {
		if b, _ := os.ReadFile(filepath.Join(cwd, wsn, w.name)); string(b) != w.want {
			t.Errorf("%s: %s holds %q, want %q", wsn, w.name, b, w.want)
		}
	}
	if got := tcp.lines(); !strings.Contains(got, "sent-"+k.name+"-"+wsn+"\n") {
		t.Errorf("%s: the host's loopback listener received %q", wsn, got)
	}
	if len(sock.received()) == 0 {
		t.Errorf("%s: the workspace's socket received nothing", wsn)
	}
	if b, _ := os.ReadFile(stores[off]); string(b) == "original\n" {
		t.Errorf("off: the control writes did not reach the file outside")
	}
}

// credFor returns the credential and binary a helper runs as: nobody's
// (u) when nobody, else the test process's own.
func (u *unprivileged) credFor(nobody bool) (cred *syscall.Credential, binary string) {
	if !nobody {
		return nil, os.Args[0]
	}
	return u.cred, u.binary
}

// mkdirOwned makes dir, owned by nobody (u) when nobody.
func mkdirOwned(t *testing.T, dir string, u *unprivileged, nobody bool) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	chownNobody(t, dir, u, nobody)
}

// writeOwned writes path, owned by nobody (u) when nobody.
func writeOwned(t *testing.T, path, data string, u *unprivileged, nobody bool) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	chownNobody(t, path, u, nobody)
}

func chownNobody(t *testing.T, path string, u *unprivileged, nobody bool) {
	t.Helper()
	if nobody {
		if err := os.Chown(path, int(u.cred.Uid), int(u.cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
}

// tcpListener is a host TCP listener on loopback that records the lines
// it receives.
type tcpListener struct {
	port int
	got  chan string
}

func listenTCP(t *testing.T) *tcpListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	l := &tcpListener{port: ln.Addr().(*net.TCPAddr).Port, got: make(chan string, 64)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			l.got <- line
		}
	}()
	return l
}

// lines is what reached l so far, after a moment for a line in flight.
func (l *tcpListener) lines() string {
	time.Sleep(50 * time.Millisecond)
	var b strings.Builder
	for {
		select {
		case line := <-l.got:
			b.WriteString(line)
		default:
			return b.String()
		}
	}
}
