package ssh

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/executortest"
	"github.com/dsh-acp/dsh-acp/internal/sshdtest"
)

// run runs command in dir and fails the test on an error.
func run(t *testing.T, e *Executor, dir, command string) executor.Result {
	t.Helper()
	res, err := runErr(e, dir, command)
	if err != nil {
		t.Fatalf("Run(%q): %v", command, err)
	}
	return res
}

func runErr(e *Executor, dir, command string) (executor.Result, error) {
	spec, err := e.Resolve(executor.Request{Command: command, SessionCwd: dir, Owner: "s1"})
	if err != nil {
		return executor.Result{}, err
	}
	return e.Run(context.Background(), spec, nil)
}

// marker is a unique `sleep` argument to find a command's processes by.
func marker(t *testing.T) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("300.%d", binary.BigEndian.Uint32(b[:])%1000000000)
}

// requireGone fails unless no process with marker in its command line is
// alive within 10 s.
func requireGone(t *testing.T, what, m string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := executortest.Processes(m) // the host is this machine
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: processes survived: %v", what, left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestConformanceWithoutLoginBash(t *testing.T) {
	srv := sshdtest.Start(t)
	executortest.RunOptions(t, sshOptions, func(t *testing.T) executor.Executor {
		e := newTestExecutor(t, testConfig(t, srv))
		e.spawner.d.execBash = true
		return e
	})
}

func TestUnknownHostKeyIsRefused(t *testing.T) {
	srv := sshdtest.Start(t)
	cfg := testConfig(t, srv)
	cfg.KnownHosts = filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(cfg.KnownHosts, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e := newTestExecutor(t, cfg)
	dir := t.TempDir()
	_, err := runErr(e, dir, "touch ran")
	var hk *HostKeyError
	if !errors.As(err, &hk) || !errors.Is(err, ErrHostKey) || len(hk.Known) != 0 {
		t.Fatalf("Run: %v, want an unknown-host *HostKeyError", err)
	}
	msg := err.Error()
	first, _, _ := strings.Cut(msg, "\n")
	for _, want := range []string{"refusing to connect to " + srv.Addr, ssh.FingerprintSHA256(srv.HostKey), "not known", "nothing was run"} {
		if !strings.Contains(first, want) {
			t.Errorf("first line %q lacks %q", first, want)
		}
	}
	if want := fmt.Sprintf("ssh-keyscan -p %d -t ed25519 127.0.0.1 >> %s", srv.Port, cfg.KnownHosts); !strings.Contains(msg, want) {
		t.Errorf("message lacks how to add the key (%q):\n%s", want, msg)
	}
	if len([]rune(first)) > 200 {
		t.Errorf("first line is %d runes: too long for a card reason", len([]rune(first)))
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the command ran")
	}
	if err := e.CheckDir(context.Background(), dir); !errors.Is(err, ErrHostKey) {
		t.Errorf("CheckDir: %v, want ErrHostKey", err)
	}
	if _, err := e.Start(executor.Spec{Command: "touch ran", Workdir: dir}); !errors.Is(err, ErrHostKey) {
		t.Errorf("Start: %v, want ErrHostKey", err)
	}
}

func TestChangedHostKeyIsRefused(t *testing.T) {
	srv := sshdtest.Start(t)
	cfg := testConfig(t, srv)
	other, err := ssh.ParsePrivateKey(mustRead(t, srv.ClientKey)) // any other key
	if err != nil {
		t.Fatal(err)
	}
	cfg.KnownHosts = filepath.Join(t.TempDir(), "known_hosts")
	line := knownhosts.Line([]string{knownhosts.Normalize(srv.Addr)}, other.PublicKey()) + "\n"
	if err := os.WriteFile(cfg.KnownHosts, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	e := newTestExecutor(t, cfg)
	dir := t.TempDir()
	_, err = runErr(e, dir, "touch ran")
	var hk *HostKeyError
	if !errors.As(err, &hk) || len(hk.Known) != 1 {
		t.Fatalf("Run: %v, want a changed-key *HostKeyError", err)
	}
	for _, want := range []string{"CHANGED", "ssh-keygen -R '[127.0.0.1]:", cfg.KnownHosts + ":1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q:\n%v", want, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the command ran")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAgentAuthentication(t *testing.T) {
	srv := sshdtest.Start(t)
	cfg := testConfig(t, srv)
	cfg.Identity = ""
	cfg.AgentSocket = sshdtest.Agent(t, srv.ClientKey)
	e := newTestExecutor(t, cfg)
	res := run(t, e, t.TempDir(), `echo "agent=${SSH_AUTH_SOCK-none}"`)
	if string(res.Stdout) != "agent=none\n" {
		t.Errorf("stdout %q: the login must work and the agent socket must not reach the command", res.Stdout)
	}
}

func TestBadCredentials(t *testing.T) {
	srv := sshdtest.Start(t)
	cfg := testConfig(t, srv)
	cfg.Identity = filepath.Join(t.TempDir(), "missing")
	if _, err := New(cfg); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing identity: %v", err)
	}
	// A key the server does not accept: the host's own key.
	cfg.Identity = filepath.Join(srv.Dir, "host_ed25519")
	e := newTestExecutor(t, cfg)
	_, err := runErr(e, t.TempDir(), "true")
	if err == nil || !strings.Contains(err.Error(), "refused every key") || !strings.Contains(err.Error(), "authorized_keys") {
		t.Errorf("rejected key: %v", err)
	}
	cfg.KnownHosts = filepath.Join(t.TempDir(), "missing")
	if _, err := New(cfg); err == nil {
		t.Error("missing --ssh-known-hosts file: no error")
	}
}

func TestEnvironmentScrubbedOnTheHost(t *testing.T) {
	srv := sshdtest.StartWith(t, sshdtest.Options{SetEnv: []string{
		"GITHUB_TOKEN=ghp_0123456789abcdefghijklmnop", "MY_API_KEY=k", "KEEP_ME=1", "GH_TOKEN=allowed",
		"URL=https://user:pass@example.com/",
	}})
	cfg := testConfig(t, srv)
	cfg.AllowEnv = []string{"GH_TOKEN"}
	e := newTestExecutor(t, cfg)
	res := run(t, e, t.TempDir(), "env")
	got := map[string]string{}
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			got[k] = v
		}
	}
	for _, gone := range []string{"GITHUB_TOKEN", "MY_API_KEY", "URL", "SSH_AUTH_SOCK"} {
		if v, ok := got[gone]; ok {
			t.Errorf("%s=%q reached the command", gone, v)
		}
	}
	// sshd sets HOME to the login account's home in the user database,
	// whatever $HOME is here (a container, sudo -E, an overridden HOME).
	account, err := user.LookupId(strconv.Itoa(os.Getuid()))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"KEEP_ME": "1", "GH_TOKEN": "allowed", "DSH_ACP": "1", "PAGER": "cat", "HOME": account.HomeDir} {
		if got[k] != v {
			t.Errorf("%s=%q, want %q", k, got[k], v)
		}
	}
}

func TestConnectionLostMidCommand(t *testing.T) {
	srv := sshdtest.Start(t)
	e := newTestExecutor(t, testConfig(t, srv))
	dir := t.TempDir()
	fg, bg := marker(t), marker(t)+"1"
	spec, _ := e.Resolve(executor.Request{Command: "trap '' TERM HUP; echo ready; sleep " + fg, SessionCwd: dir})
	task, err := e.Start(executor.Spec{Command: "trap '' TERM HUP; sleep " + bg, Workdir: dir, Owner: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	var once sync.Once
	type outcome struct {
		res executor.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := e.Run(context.Background(), spec, func(executor.Chunk) { once.Do(func() { close(ready) }) })
		done <- outcome{res, err}
	}()
	<-ready
	srv.Stop()
	var o outcome
	select {
	case o = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not end after the server was stopped")
	}
	var lost *LostError
	if !errors.As(o.err, &lost) || !errors.Is(o.err, ErrConnectionLost) || !strings.Contains(o.err.Error(), "lost the connection to "+srv.Addr) {
		t.Fatalf("Run: %v, want a connection-lost error", o.err)
	}
	if string(o.res.Stdout) != "ready\n" {
		t.Errorf("output before the loss: %q", o.res.Stdout)
	}
	requireGone(t, "the foreground command after the connection was lost", fg)
	requireGone(t, "a task after the connection was lost", bg)
	var r executor.ReadResult
	var out []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if r, err = e.Read(task, "s1"); err != nil || r.Status != executor.Running || time.Now().After(deadline) {
			break
		}
		out = append(out, r.Output...)
	}
	r.Output = append(out, r.Output...)
	if err != nil || r.Status != executor.Killed || !strings.HasPrefix(string(r.Output), "dsh-acp: lost the connection to "+srv.Addr) {
		t.Errorf("task after the loss: %+v %q %v", r, r.Output, err)
	}
	// Nothing runs while the host is down; the first command after it is
	// back reconnects.
	if _, err := runErr(e, dir, "true"); err == nil || !strings.Contains(err.Error(), "cannot reach") {
		t.Errorf("Run with the server down: %v", err)
	}
	srv.Restart()
	if res := run(t, e, dir, "echo back"); string(res.Stdout) != "back\n" {
		t.Errorf("after the restart: %q", res.Stdout)
	}
}

func TestKeepAliveNoticesASilentHost(t *testing.T) {
	srv := sshdtest.Start(t)
	cfg := testConfig(t, srv)
	cfg.KeepAlive, cfg.KeepAliveTimeout = 200*time.Millisecond, 600*time.Millisecond
	e := newTestExecutor(t, cfg)
	m := marker(t)
	spec, _ := e.Resolve(executor.Request{Command: "echo ready; sleep " + m, SessionCwd: t.TempDir(), Timeout: time.Minute})
	ready := make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	go func() {
		_, err := e.Run(context.Background(), spec, func(executor.Chunk) { once.Do(func() { close(ready) }) })
		done <- err
	}()
	<-ready
	if err := srv.SignalConnections(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	defer srv.SignalConnections(syscall.SIGCONT)
	select {
	case err := <-done:
		if !errors.Is(err, ErrConnectionLost) || !strings.Contains(err.Error(), "keep-alives") {
			t.Errorf("Run: %v, want a keep-alive loss", err)
		}
		t.Logf("loss noticed %v after the host went silent", time.Since(stopped).Round(time.Millisecond))
	case <-time.After(15 * time.Second):
		t.Fatal("a silent host was not noticed within 15 s")
	}
	// Once the host runs again it sees the closed connection, and the
	// command's group dies with its session.
	if err := srv.SignalConnections(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	requireGone(t, "the command after its connection was dropped", m)
}

func TestSpillFilesLiveOnTheHost(t *testing.T) {
	srv := sshdtest.Start(t)
	cfg := testConfig(t, srv)
	cfg.Engine.CaptureBytes = 64 << 10
	e := newTestExecutor(t, cfg)
	dir := t.TempDir()
	res := run(t, e, dir, "seq 1 100000")
	if res.SpillPath == "" || res.Dropped == 0 {
		t.Fatalf("no spill: %+v", res.SpillPath)
	}
	ownerDir := filepath.Join(cfg.RemoteStateDir, "spill", "o-s1")
	if filepath.Dir(res.SpillPath) != ownerDir {
		t.Errorf("spill %s is not in the remote owner directory %s", res.SpillPath, ownerDir)
	}
	for path, mode := range map[string]fs.FileMode{filepath.Dir(ownerDir): 0o700, ownerDir: 0o700, res.SpillPath: 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v %v, want mode %v", path, fi.Mode(), err, mode)
		}
	}
	// The model's next command reads it, on the host.
	if got := run(t, e, dir, "wc -c < "+res.SpillPath); strings.TrimSpace(string(got.Stdout)) != "588895" {
		t.Errorf("wc -c of the spill: %q", got.Stdout)
	}
	// A spill past the cap is removed on the host and not advertised.
	cfg2 := testConfig(t, srv)
	cfg2.Engine.CaptureBytes, cfg2.Engine.SpillCap = 64<<10, 100<<10
	e2 := newTestExecutor(t, cfg2)
	res = run(t, e2, dir, "seq 1 100000")
	if res.SpillPath != "" {
		t.Errorf("an incomplete spill is advertised: %s", res.SpillPath)
	}
	left, _ := filepath.Glob(filepath.Join(cfg2.RemoteStateDir, "spill", "o-s1", "*"))
	if len(left) != 0 {
		t.Errorf("incomplete spill files left on the host: %v", left)
	}
}

func TestCheckDir(t *testing.T) {
	srv := sshdtest.Start(t)
	e := newTestExecutor(t, testConfig(t, srv))
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	odd := filepath.Join(dir, "it's a\n'dir'")
	if err := os.Mkdir(odd, 0o700); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dir  string
		want error
	}{
		{dir, nil},
		{odd, nil},
		{filepath.Join(dir, "missing"), fs.ErrNotExist},
		{file, syscall.ENOTDIR},
		{"relative", executor.ErrWorkdir},
	}
	for _, tc := range tests {
		err := e.CheckDir(context.Background(), tc.dir)
		if tc.want == nil && err != nil || tc.want != nil && (!errors.Is(err, tc.want) || !errors.Is(err, executor.ErrWorkdir)) {
			t.Errorf("CheckDir(%q) = %v, want %v", tc.dir, err, tc.want)
		}
	}
	if res := run(t, e, odd, "pwd"); string(res.Stdout) != odd+"\n" {
		t.Errorf("pwd in an odd directory: %q", res.Stdout)
	}
}

func TestRemoteMapping(t *testing.T) {
	e := &Executor{target: Target{Host: "build1", Dir: "/srv/proj"}}
	if got := e.SessionDir("/home/me/proj"); got != "/srv/proj" {
		t.Errorf("SessionDir with a path = %q", got)
	}
	if got := e.Location("/srv/proj/sub"); got != "build1:/srv/proj/sub" {
		t.Errorf("Location = %q", got)
	}
	if !strings.Contains(e.Describe(), "build1") {
		t.Errorf("Describe = %q", e.Describe())
	}
	e.target.Dir = ""
	if got := e.SessionDir("/home/me/proj"); got != "/home/me/proj" {
		t.Errorf("SessionDir without a path = %q", got)
	}
}

func TestStdinLeavesNoFile(t *testing.T) {
	srv := sshdtest.Start(t)
	e := newTestExecutor(t, testConfig(t, srv))
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "dsh-acp-stdin.*"))
	spec, _ := e.Resolve(executor.Request{Command: "ls /proc/self/fd | wc -l; cat", SessionCwd: t.TempDir(), Stdin: []byte("data\x00\xff")})
	res, err := e.Run(context.Background(), spec, nil)
	if err != nil || !strings.HasSuffix(string(res.Stdout), "data\x00\xff") {
		t.Fatalf("stdin: %q %v", res.Stdout, err)
	}
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), "dsh-acp-stdin.*"))
	if len(after) > len(before) {
		t.Errorf("stdin files left: %v", after)
	}
}

func TestMaxSessionsIsExplained(t *testing.T) {
	srv := sshdtest.Start(t)
	e := newTestExecutor(t, testConfig(t, srv))
	dir := t.TempDir()
	var err error
	for i := 0; i < 11 && err == nil; i++ {
		_, err = e.Start(executor.Spec{Command: "sleep " + marker(t), Workdir: dir, Owner: "s1"})
	}
	if err == nil || !strings.Contains(err.Error(), "MaxSessions") {
		t.Errorf("the 11th concurrent command: %v, want an error naming sshd's MaxSessions", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e.KillOwned(ctx, "s1")
	if res := run(t, e, dir, "echo again"); string(res.Stdout) != "again\n" {
		t.Errorf("after the tasks ended: %q", res.Stdout)
	}
}

func TestLongScript(t *testing.T) {
	srv := sshdtest.Start(t)
	e := newTestExecutor(t, testConfig(t, srv))
	script := strings.Repeat("# "+strings.Repeat("x", 1021)+"\n", 5<<10) + `echo "$0 $LINENO"`
	res := run(t, e, t.TempDir(), script)
	if want := fmt.Sprintf("bash %d\n", 5<<10+1); string(res.Stdout) != want {
		t.Errorf("5 MiB script: stdout %q, want %q (stderr %q)", res.Stdout, want, res.Stderr)
	}
}
