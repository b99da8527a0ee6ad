// Package sshdtest runs a real OpenSSH server for tests: /usr/sbin/sshd on
// 127.0.0.1 and a free port, with a generated host key, a generated client
// key in authorized_keys and a known_hosts file naming the host key, all in
// a temporary directory. Tests log in as the user running them, or (run as
// root, Options.Nobody) as nobody, an unprivileged remote user.
//
//	srv := sshdtest.Start(t)
//	// connect to srv.Addr as srv.User with srv.ClientKey, checking the
//	// host key against srv.KnownHosts
//
// Start skips the test with the reason when no sshd is installed, except
// under CI=true, where a missing sshd fails it. The server is stopped when
// the test ends. Stop ends the server the hard way a crash or an outage
// would: the listener and every per-connection sshd process are killed
// (only processes descended from the sshd this package started), so open
// connections die with it; Restart brings it back on the same port with the
// same keys.
//
// Sessions start with SHLVL=1 (sshd's SetEnv): bash sources ~/.bashrc for a
// non-interactive shell it believes sshd started only at shell level 1, and
// a developer's rc file (pyenv, nvm) can cost hundreds of milliseconds per
// command, which would swamp both the suites and the benchmarks. Everything
// else about a session is sshd's own: the login shell from the password
// database, the user's home, sshd's environment.
//
// # Known limits
//
// Linux only (the per-connection processes are found in /proc). When run as
// root it creates sshd's privilege separation directory (/run/sshd) if it
// is missing.
package sshdtest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHD is where Debian's openssh-server installs the server.
const SSHD = "/usr/sbin/sshd"

// Server is one running sshd.
type Server struct {
	// Addr is "127.0.0.1:port"; Host and Port are its parts.
	Addr string
	Host string
	Port int
	// User is the name to log in as: the user running the test.
	User string
	// ClientKey is the path of an unencrypted ed25519 private key that
	// authorized_keys accepts; ClientSigner is the same key.
	ClientKey    string
	ClientSigner ssh.Signer
	// HostKey is the server's public host key; KnownHosts the path of a
	// known_hosts file holding it (and nothing else).
	HostKey    ssh.PublicKey
	KnownHosts string
	// Dir is the temporary directory holding the keys and the config.
	Dir string

	t      testing.TB
	opts   Options
	config string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has been waited for
	log  *bytes.Buffer
}

// Options adjust the server.
type Options struct {
	// SetEnv are extra NAME=value variables sshd sets in every session
	// (its SetEnv), e.g. a credential a login environment would carry.
	SetEnv []string
	// Nobody logs in as nobody (NobodyUID) instead of the user running
	// the test: an unprivileged remote user for a test run as root. sshd
	// then runs in a private mount namespace (util-linux unshare) whose
	// /etc/passwd gives nobody /bin/bash as its shell and / as its home;
	// the host's own files are not changed. Root only: the test fails
	// otherwise.
	Nobody bool
}

// NobodyUID is the uid (and gid) of Options.Nobody's user.
const NobodyUID = 65534

// Start starts sshd for t and stops it when t ends. See the package doc
// for when it skips.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith is Start with options.
func StartWith(t testing.TB, opts Options) *Server {
	t.Helper()
	if _, err := os.Stat(SSHD); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("sshdtest: %s is missing (install openssh-server): %v", SSHD, err)
		}
		t.Skipf("sshdtest: skipped: %s is not installed (Debian package openssh-server)", SSHD)
	}
	if os.Geteuid() == 0 {
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatalf("sshdtest: privilege separation directory: %v", err)
		}
	}
	u, err := user.Current()
	if err != nil {
		t.Fatalf("sshdtest: current user: %v", err)
	}
	s := &Server{t: t, Dir: t.TempDir(), User: u.Username, Host: "127.0.0.1", opts: opts}
	if opts.Nobody {
		if os.Geteuid() != 0 {
			t.Fatal("sshdtest: Options.Nobody needs root")
		}
		if s.Dir, err = nobodyDir(t); err != nil {
			t.Fatalf("sshdtest: %v", err)
		}
		s.User = "nobody"
	}
	if err := s.writeKeys(); err != nil {
		t.Fatalf("sshdtest: %v", err)
	}
	t.Cleanup(s.Stop)
	var lastErr error
	for range 5 { // a free port may be taken between the probe and sshd's bind
		port, err := freePort()
		if err != nil {
			t.Fatalf("sshdtest: %v", err)
		}
		s.Port, s.Addr = port, net.JoinHostPort(s.Host, strconv.Itoa(port))
		if err := s.writeConfig(); err != nil {
			t.Fatalf("sshdtest: %v", err)
		}
		if lastErr = s.start(); lastErr == nil {
			return s
		}
	}
	t.Fatalf("sshdtest: sshd did not start: %v", lastErr)
	return nil
}

func (s *Server) writeKeys() error {
	hostPub, err := writeKey(filepath.Join(s.Dir, "host_ed25519"))
	if err != nil {
		return err
	}
	s.HostKey = hostPub
	s.ClientKey = filepath.Join(s.Dir, "client_ed25519")
	clientPub, err := writeKey(s.ClientKey)
	if err != nil {
		return err
	}
	pem, err := os.ReadFile(s.ClientKey)
	if err != nil {
		return err
	}
	if s.ClientSigner, err = ssh.ParsePrivateKey(pem); err != nil {
		return err
	}
	mode := os.FileMode(0o600)
	if s.opts.Nobody {
		mode = 0o644 // sshd reads it as the user logging in
	}
	return os.WriteFile(filepath.Join(s.Dir, "authorized_keys"), ssh.MarshalAuthorizedKey(clientPub), mode)
}

// nobodyDir is a directory for the server's files that nobody can
// traverse (t.TempDir's parent is private), removed when t ends, holding
// the passwd file nobody logs in through.
func nobodyDir(t testing.TB) (string, error) {
	dir, err := os.MkdirTemp("", "sshdtest-nobody-")
	if err != nil {
		return "", err
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	b, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return "", err
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	lines = slices.DeleteFunc(lines, func(l string) bool { return strings.HasPrefix(l, "nobody:") })
	lines = append(lines, fmt.Sprintf("nobody:x:%d:%d:nobody:/:/bin/bash", NobodyUID, NobodyUID))
	return dir, os.WriteFile(filepath.Join(dir, "passwd"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// writeKey writes a new ed25519 private key (OpenSSH format, 0600) to path
// and returns its public key.
func writeKey(path string) (ssh.PublicKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		return nil, err
	}
	return ssh.NewPublicKey(pub)
}

func (s *Server) writeConfig() error {
	s.KnownHosts = filepath.Join(s.Dir, "known_hosts")
	line := knownhosts.Line([]string{knownhosts.Normalize(s.Addr)}, s.HostKey) + "\n"
	if err := os.WriteFile(s.KnownHosts, []byte(line), 0o600); err != nil {
		return err
	}
	s.config = filepath.Join(s.Dir, "sshd_config")
	cfg := strings.Join([]string{
		"ListenAddress " + s.Addr,
		"HostKey " + filepath.Join(s.Dir, "host_ed25519"),
		"AuthorizedKeysFile " + filepath.Join(s.Dir, "authorized_keys"),
		"PidFile none",
		"PermitRootLogin prohibit-password",
		"PubkeyAuthentication yes",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"UsePAM no",
		"StrictModes no",
		"SetEnv SHLVL=1" + setEnv(s.opts.SetEnv),
		"LogLevel ERROR",
		"",
	}, "\n")
	return os.WriteFile(s.config, []byte(cfg), 0o600)
}

// setEnv formats extra SetEnv entries, quoted for sshd_config.
func setEnv(vars []string) string {
	var b strings.Builder
	for _, kv := range vars {
		b.WriteString(` "` + strings.ReplaceAll(kv, `"`, `\"`) + `"`)
	}
	return b.String()
}

// Agent starts a real ssh-agent for t holding the private key at keyPath
// and returns its socket; the agent is stopped when t ends. It skips (or,
// under CI=true, fails) when ssh-agent is not installed.
func Agent(t testing.TB, keyPath string) string {
	t.Helper()
	agentBin, err := exec.LookPath("ssh-agent")
	if err == nil {
		_, err = exec.LookPath("ssh-add")
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("sshdtest: ssh-agent is missing (install openssh-client): %v", err)
		}
		t.Skipf("sshdtest: skipped: ssh-agent or ssh-add is not installed (Debian package openssh-client): %v", err)
	}
	sock := filepath.Join(t.TempDir(), "agent.sock")
	cmd := exec.Command(agentBin, "-D", "-a", sock)
	cmd.SysProcAttr = dieWithTest()
	if err := cmd.Start(); err != nil {
		t.Fatalf("sshdtest: ssh-agent: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		add := exec.Command("ssh-add", keyPath)
		add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
		out, err := add.CombinedOutput()
		if err == nil {
			return sock
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshdtest: ssh-add: %v: %s", err, out)
		}
		time.Sleep(10 * time.Millisecond) // the socket appears once the agent listens
	}
}

// start runs sshd and waits until it accepts connections.
func (s *Server) start() error {
	cmd := exec.Command(SSHD, "-D", "-e", "-f", s.config)
	if s.opts.Nobody {
		// unshare and sh exec in place: the pid stays sshd's.
		cmd = exec.Command("unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
			`mount --bind "$0" /etc/passwd && exec "$@"`, filepath.Join(s.Dir, "passwd"), SSHD, "-D", "-e", "-f", s.config)
	}
	log := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = log, log
	// A test binary that dies (a timeout panic) takes its sshd along.
	cmd.SysProcAttr = dieWithTest()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", SSHD, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-done:
			return fmt.Errorf("sshd exited: %s", strings.TrimSpace(log.String()))
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-done
			return fmt.Errorf("sshd does not accept connections on %s: %s", s.Addr, strings.TrimSpace(log.String()))
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.mu.Lock()
	s.cmd, s.done, s.log = cmd, done, log
	s.mu.Unlock()
	return nil
}

// Restart starts sshd again after Stop, on the same port with the same keys.
func (s *Server) Restart() {
	s.t.Helper()
	s.mu.Lock()
	running := s.cmd != nil
	s.mu.Unlock()
	if running {
		s.t.Fatal("sshdtest: Restart while the server runs")
	}
	var err error
	for range 50 { // the port may still be held for a moment
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("sshdtest: restart: %v", err)
}

// Stop kills sshd and every per-connection sshd process it started (the
// sessions' own processes are left to notice: their pipes close), and
// waits until they are gone. Safe to call twice.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	pids := append([]int{cmd.Process.Pid}, s.connections(cmd.Process.Pid)...)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	<-done
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids[1:] {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// Connections lists the pids of the per-connection sshd processes (the
// privileged monitor and the session handler of each connection).
func (s *Server) Connections() []int {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	return s.connections(cmd.Process.Pid)
}

// SignalConnections sends sig to every per-connection sshd process:
// SIGSTOP makes each connection silent without closing it (a network that
// stopped answering), SIGCONT resumes them.
func (s *Server) SignalConnections(sig syscall.Signal) error {
	var errs []error
	for _, pid := range s.Connections() {
		if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Log is what sshd wrote so far.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log == nil {
		return ""
	}
	return s.log.String()
}

// connections finds the sshd processes descended from root.
func (s *Server) connections(root int) []int {
	parents := map[int][]int{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		pid, _ := strconv.Atoi(filepath.Base(dir))
		if ppid, ok := parentOf(pid); ok {
			parents[ppid] = append(parents[ppid], pid)
		}
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range parents[p] {
			if isSSHD(c) {
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	slices.Sort(out)
	return out
}

// parentOf reads a process's parent pid from /proc.
func parentOf(pid int) (int, bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// isSSHD reports whether pid runs the sshd binary.
func isSSHD(pid int) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return err == nil && (exe == SSHD || strings.TrimSuffix(exe, " (deleted)") == SSHD)
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && len(stat) > i+2 && stat[i+2] != 'Z' && stat[i+2] != 'X'
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
