package ipcguard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The tests run the real thing: bubblewrap started from a thread that
// holds the guard's filter, the supervisor in a process of its own (this
// test binary in "supervisor" mode, as root and as an unprivileged user
// through setpriv), and the client (this binary in "client" mode) inside.
// Each way out is judged on the host: a listener that received nothing.
// Each is also run at level off (no sandbox, no guard), where it must
// land, so each check can fail.

const (
	modeEnv      = "IPCGUARD_TEST_MODE"
	clientEnvVar = "IPCGUARD_TEST_CLIENT"
	guardedEnv   = "IPCGUARD_TEST_GUARDED"
	wsEnv        = "IPCGUARD_TEST_WS"
	bindEnv      = "IPCGUARD_TEST_BIND"
	// cmdEnv, when set, is the command (a JSON argv) the supervisor runs
	// instead of the client; roEnv binds the workspace read-only.
	cmdEnv = "IPCGUARD_TEST_CMD"
	roEnv  = "IPCGUARD_TEST_RO"
	// linksEnv makes the guard Config.LinksOnly and shares the network
	// (level workspace-network).
	linksEnv = "IPCGUARD_TEST_LINKS"
	// testUID is the unprivileged user of the tests (nobody).
	testUID = 65534
)

func TestMain(m *testing.M) {
	switch os.Getenv(modeEnv) {
	case "client":
		os.Exit(clientMain())
	case "supervisor":
		os.Exit(supervisorMain())
	case "fileclient":
		os.Exit(fileClientMain())
	}
	os.Exit(m.Run())
}

// supervisorMain runs the client: inside bubblewrap from a guarded thread,
// or plainly (level off). This binary is fd 3; it passes it on.
func supervisorMain() int {
	ws := os.Getenv(wsEnv)
	env := withEnv(os.Environ(), modeEnv, "client")
	exe := os.NewFile(3, "exe")
	attr := &os.ProcAttr{Dir: ws, Env: env, Files: []*os.File{os.Stdin, os.Stdout, os.Stderr, exe}}
	argv := []string{"/proc/self/fd/3", "client"}
	if c := os.Getenv(cmdEnv); c != "" {
		if err := json.Unmarshal([]byte(c), &argv); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		attr.Env = withEnv(env, modeEnv, "fileclient")
	}
	if os.Getenv(guardedEnv) == "" {
		path, err := exec.LookPath(argv[0])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		return wait(os.StartProcess(path, argv, attr))
	}
	// Like the daemon (local.MakeNonDumpable): the supervisor must work
	// from a process nobody may ptrace.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	linksOnly := os.Getenv(linksEnv) != ""
	g := New(Config{LinksOnly: linksOnly})
	defer g.Close()
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	args := append([]string{"bwrap"}, bwrapArgs(strings.Split(os.Getenv(bindEnv), ":"), ws)...)
	if linksOnly {
		args = slices.DeleteFunc(args, func(a string) bool { return a == "--unshare-net" })
	}
	if i := slices.Index(args, "--bind"); i >= 0 && os.Getenv(roEnv) != "" {
		args[i] = "--ro-bind" // the workspace: level read-only
	}
	args = append(append(args, "--"), argv...)
	// The filter is loaded on a locked thread that starts bwrap and ends
	// with it (never unlocked); the rest of this process stays unfiltered.
	started := make(chan int, 1)
	go func() {
		runtime.LockOSThread()
		if err := g.Install(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			started <- 2
			return
		}
		started <- wait(os.StartProcess(bwrap, args, attr))
	}()
	return <-started
}

// bwrapArgs are the no-network sandbox of executor/sandbox, reduced: the
// host read-only, private /tmp and /run, binds (the fake home) read-only
// and the workspace writable.
func bwrapArgs(binds []string, ws string) []string {
	a := []string{"--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--unshare-user", "--disable-userns", "--cap-drop", "ALL", "--unshare-net",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/run"}
	for _, b := range binds {
		if b != "" {
			a = append(a, "--ro-bind", b, b)
		}
	}
	return append(a, "--bind", ws, ws, "--chdir", ws)
}

// withEnv returns env with name set to value (and only once: a process
// reads the first of two).
func withEnv(env []string, name, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return append(out, name+"="+value)
}

func wait(p *os.Process, err error) int {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	st, err := p.Wait()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return st.ExitCode()
}

// host is the host side of one run: a fake $HOME with a Docker-like socket
// and a datagram socket, a workspace with git's fsmonitor socket, and an
// abstract socket; each records what it receives.
type host struct {
	dir, home, ws string
	env           clientEnv
	mu            sync.Mutex
	got           map[string][]string // listener → payloads received
	closers       []func()
}

func newHost(t *testing.T, owner int) *host {
	t.Helper()
	dir, err := os.MkdirTemp("", "ipcguard-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	h := &host{dir: dir, home: filepath.Join(dir, "home"), ws: filepath.Join(dir, "ws"), got: map[string][]string{}}
	for _, d := range []string{dir, h.home, filepath.Join(h.home, ".colima", "default"), filepath.Join(h.ws, ".git")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		chown(t, d, owner)
	}
	chown(t, h.ws, owner)
	chown(t, filepath.Join(h.home, ".colima"), owner)
	h.env = clientEnv{
		HomeSock:  filepath.Join(h.home, ".colima", "default", "docker.sock"),
		HomeDgram: filepath.Join(h.home, "dgram.sock"),
		WsSock:    ".git/fsmonitor--daemon.ipc",
		Abstract:  "ipcguard-test-" + filepath.Base(dir),
		Tmp:       "/tmp/" + filepath.Base(dir) + "-client",
		Race:      300,
	}
	h.listen(t, "home", h.env.HomeSock, owner)
	h.listen(t, "ws", filepath.Join(h.ws, h.env.WsSock), owner)
	h.listen(t, "abstract", "@"+h.env.Abstract, -1)
	h.listenDgram(t, "dgram", h.env.HomeDgram, owner)
	t.Cleanup(func() {
		for _, c := range h.closers {
			c()
		}
		os.RemoveAll(h.env.Tmp) // at level off the client's /tmp is the host's
	})
	return h
}

func chown(t *testing.T, path string, owner int) {
	t.Helper()
	if owner < 0 {
		return
	}
	if err := os.Lchown(path, owner, owner); err != nil {
		t.Fatal(err)
	}
}

// listen serves a stream socket at addr owned by owner (its mode lets its
// owner connect: a socket of the user's own).
func (h *host) listen(t *testing.T, name, addr string, owner int) {
	t.Helper()
	l, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(addr, "@") {
		chown(t, addr, owner)
	}
	h.closers = append(h.closers, func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
				b := make([]byte, 256)
				n, _ := c.Read(b)
				h.record(name, fmt.Sprintf("connection: %q", b[:n]))
			}()
		}
	}()
}

func (h *host) listenDgram(t *testing.T, name, path string, owner int) {
	t.Helper()
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	chown(t, path, owner)
	h.closers = append(h.closers, func() { c.Close() })
	go func() {
		b := make([]byte, 256)
		for {
			n, _, err := c.ReadFrom(b)
			if err != nil {
				return
			}
			h.record(name, fmt.Sprintf("datagram: %q", b[:n]))
		}
	}()
}

func (h *host) record(name, what string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got[name] = append(h.got[name], what)
}

// received is what name received, after a moment for connections still
// in flight to be accepted and read.
func (h *host) received(name string) []string {
	time.Sleep(50 * time.Millisecond)
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.got[name]
}

// runClient runs the client as uid (-1: as this process), guarded in
// bubblewrap or plainly, and returns its results.
func (h *host) runClient(t *testing.T, uid int, guarded bool) map[string]string {
	t.Helper()
	exe, err := os.Open("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Close()
	cenv := h.env
	cenv.Landing = !guarded
	env, _ := json.Marshal(cenv)
	var cmd *exec.Cmd
	if uid >= 0 {
		cmd = exec.Command("setpriv", "--reuid="+strconv.Itoa(uid), "--regid="+strconv.Itoa(uid), "--clear-groups", "/proc/self/fd/3")
	} else {
		cmd = exec.Command("/proc/self/fd/3")
	}
	cmd.ExtraFiles = []*os.File{exe}
	cmd.Dir = "/"
	cmd.Env = withEnv(os.Environ(), modeEnv, "supervisor")
	cmd.Env = withEnv(cmd.Env, clientEnvVar, string(env))
	cmd.Env = withEnv(cmd.Env, wsEnv, h.ws)
	cmd.Env = withEnv(cmd.Env, bindEnv, h.home)
	cmd.Env = withEnv(cmd.Env, guardedEnv, "")
	if guarded {
		cmd.Env = withEnv(cmd.Env, guardedEnv, "1")
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("client (uid %d, guarded %v): %v\nstdout: %s\nstderr: %s", uid, guarded, err, stdout.String(), stderr.String())
	}
	res, err := parseResults(stdout.String())
	if err != nil {
		t.Fatalf("%v\nstderr: %s", err, stderr.String())
	}
	t.Logf("client (uid %d, guarded %v): %v", uid, guarded, res)
	return res
}
