package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/engine"
	"github.com/dsh-acp/dsh-acp/executor/executortest"
	"github.com/dsh-acp/dsh-acp/executor/local"
)

// listener is a host Unix socket that records what reaches it.
type listener struct {
	mu  sync.Mutex
	got []string
}

func listenUnix(t *testing.T, path string) *listener {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	rec := &listener{}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
			b := make([]byte, 64)
			n, _ := c.Read(b)
			c.Close()
			rec.mu.Lock()
			rec.got = append(rec.got, fmt.Sprintf("%q", b[:n]))
			rec.mu.Unlock()
		}
	}()
	return rec
}

// received is what reached l, after a moment for a connection in flight.
func (l *listener) received() []string {
	time.Sleep(50 * time.Millisecond)
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.got...)
}

// perlDial connects to each path given and writes a line; perl (perl-base,
// on every Debian-like system) is the client.
const perlDial = `perl -MIO::Socket::UNIX -e 'for $p (@ARGV) { $s = IO::Socket::UNIX->new(Peer => $p) or do { print "$p: $!\n"; next }; print $s "POST /containers/create\n"; close $s; print "$p: ok\n" }' `

// perlOrdinary runs a server and a client on /tmp and a socketpair.
const perlOrdinary = `perl -MIO::Socket::UNIX -MSocket -e '
$l = IO::Socket::UNIX->new(Local => "/tmp/srv.sock", Listen => 1) or die "listen: $!";
if (!fork) { $c = IO::Socket::UNIX->new(Peer => "/tmp/srv.sock") or die "dial: $!"; print $c "ping\n"; exit 0 }
$a = $l->accept; $line = <$a>; print "tmp: $line";
socketpair($x, $y, AF_UNIX, SOCK_STREAM, 0) or die "socketpair: $!"; syswrite($x, "ping\n"); sysread($y, $b, 5); print "pair: $b";'`

// TestNoIPCOutWithoutNetwork: at read-only and workspace a host listener
// on a path socket under $HOME (where Colima puts Docker's) and on git's
// fsmonitor socket in the workspace receives nothing; at off both receive
// (the check can fail); a /tmp server and client and a socketpair work.
func TestNoIPCOutWithoutNetwork(t *testing.T) {
	requireBwrap(t)
	home := testHome(t)
	ws := t.TempDir()
	e := newTestExecutor(t, Config{Home: home})
	dockerSock := filepath.Join(home, ".colima", "default", "docker.sock")
	docker := listenUnix(t, dockerSock)
	fsmonitor := listenUnix(t, filepath.Join(ws, ".git", "fsmonitor--daemon.ipc"))
	cmd := perlDial + dockerSock + " .git/fsmonitor--daemon.ipc"
	for _, level := range []executor.Level{executor.LevelReadOnly, executor.LevelWorkspace} {
		res := run(t, e, level, ws, cmd)
		t.Logf("%s: %s", level, res.Combined)
		if got := append(docker.received(), fsmonitor.received()...); len(got) > 0 {
			t.Fatalf("%s: a host listener received %v", level, got)
		}
		if n := strings.Count(string(res.Combined), "Permission denied"); n != 2 {
			t.Errorf("%s: want both connects refused, got %s", level, res.Combined)
		}
		res = run(t, e, level, ws, perlOrdinary)
		if out := string(res.Combined); !strings.Contains(out, "tmp: ping") || !strings.Contains(out, "pair: ping") {
			t.Errorf("%s: ordinary sockets failed (exit %d): %s", level, res.ExitCode, out)
		}
	}
	res := run(t, e, executor.LevelOff, ws, cmd)
	if len(docker.received()) != 1 || len(fsmonitor.received()) != 1 {
		t.Fatalf("off: the listeners did not receive the control connects: %s", res.Combined)
	}
}

// hostFIFO makes a FIFO at path that a host reader holds open (with a
// write end of its own, never written, so a sandboxed writer's bytes wait
// in the pipe) and returns a function reading what reached it.
func hostFIFO(t *testing.T, path string) func() string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o666); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	var got []byte
	return func() string {
		buf := make([]byte, 4096)
		for {
			n, err := syscall.Read(int(r.Fd()), buf)
			if err != nil || n <= 0 {
				return string(got)
			}
			got = append(got, buf[:n]...)
		}
	}
}

// TestNoFIFOWriteOrLinkWriteOut: through the real executor, at read-only
// and workspace no host reader of a FIFO under $HOME or in the workspace
// receives a byte, and at workspace a write to a workspace file that is a
// hard link to a file outside (a pnpm store's) leaves that file unchanged
// while the workspace name holds the new content; at off all land (the
// check can fail).
func TestNoFIFOWriteOrLinkWriteOut(t *testing.T) {
	requireBwrap(t)
	home := testHome(t)
	ws := t.TempDir()
	store := filepath.Join(t.TempDir(), "store", "index.js")
	if err := os.MkdirAll(filepath.Dir(store), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(store, []byte("original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(store, filepath.Join(ws, "index.js")); err != nil {
		t.Fatal(err)
	}
	e := newTestExecutor(t, Config{Home: home})
	homeFIFO := hostFIFO(t, filepath.Join(home, "fifo"))
	wsFIFO := hostFIFO(t, filepath.Join(ws, "fifo"))
	cmd := "for f in " + filepath.Join(home, "fifo") + " fifo; do timeout 5 sh -c 'echo pwned > $0' $f; done; echo x >> index.js; cat index.js"
	for _, level := range []executor.Level{executor.LevelReadOnly, executor.LevelWorkspace} {
		res := run(t, e, level, ws, cmd)
		t.Logf("%s: %s", level, res.Combined)
		if got := homeFIFO() + wsFIFO(); got != "" {
			t.Errorf("%s: a FIFO's host reader received %q", level, got)
		}
		if b, _ := os.ReadFile(store); string(b) != "original\n" {
			t.Fatalf("%s: the file outside the workspace changed: %q", level, b)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "index.js")); string(b) != "original\nx\n" {
		t.Errorf("workspace: the workspace file holds %q, want the appended line", b)
	}
	if err := os.Link(store, filepath.Join(ws, "again.js")); err != nil {
		t.Fatal(err)
	}
	res := run(t, e, executor.LevelOff, ws, strings.ReplaceAll(cmd, "index.js", "again.js"))
	if homeFIFO() == "" || wsFIFO() == "" {
		t.Errorf("off: the FIFOs' readers did not receive the control writes: %s", res.Combined)
	}
	if b, _ := os.ReadFile(store); string(b) == "original\n" {
		t.Errorf("off: the control write did not reach the file outside")
	}
}

// BenchmarkGuardOverhead: a foreground `true` at workspace (the whole
// guard) and at workspace-network (the links-only guard), and 500 files
// written there (500 writing opens), started from the level's guard
// thread and (the guards taken away) from the spawn thread, paired call
// by call; the median of the per-pair ratios is the guard's cost per
// call.
func BenchmarkGuardOverhead(b *testing.B) {
	requireBwrap(b)
	for _, c := range []struct {
		name    string
		level   executor.Level
		command string
		pairs   int
	}{
		{"workspace", executor.LevelWorkspace, "true", 60},
		{"workspace-network", executor.LevelWorkspaceNetwork, "true", 60},
		{"workspace-network-500-writes", executor.LevelWorkspaceNetwork, "for i in $(seq 500); do echo x > f$i; done", 15},
	} {
		b.Run(c.name, func(b *testing.B) { benchGuardOverhead(b, c.level, c.command, c.pairs) })
	}
}

func benchGuardOverhead(b *testing.B, level executor.Level, command string, pairs int) {
	ws := b.TempDir()
	run := func(unguarded bool) func() error {
		sp, err := NewSpawner(Config{Config: local.Config{StateDir: b.TempDir()}, Home: testHome(b)})
		if err != nil {
			b.Fatal(err)
		}
		sp.guards.off = unguarded
		e, err := engine.New(sp, engine.Config{StateDir: sp.stateDir})
		if err != nil {
			b.Fatal(err)
		}
		executortest.ShutDownAtEnd(b, e, 20*time.Second)
		spec, err := e.Resolve(executor.Request{Command: command, SessionCwd: ws, Level: level})
		if err != nil {
			b.Fatal(err)
		}
		return func() error {
			res, err := e.Run(context.Background(), spec, nil)
			if err == nil && res.ExitCode != 0 {
				err = fmt.Errorf("exit %d: %s", res.ExitCode, res.Combined)
			}
			return err
		}
	}
	guarded, plain := run(false), run(true)
	var tg, tp []time.Duration
	var ratios []float64
	b.ResetTimer()
	for i := range max(b.N, pairs) {
		var dg, dp time.Duration
		for k := range 2 {
			f, d := guarded, &dg
			if (i+k)%2 == 1 {
				f, d = plain, &dp
			}
			start := time.Now()
			if err := f(); err != nil {
				b.Fatal(err)
			}
			*d = time.Since(start)
		}
		tg, tp, ratios = append(tg, dg), append(tp, dp), append(ratios, float64(dg)/float64(dp))
	}
	b.StopTimer()
	mg, mp, ratio := median(tg), median(tp), medianFloat(ratios)
	b.ReportMetric(float64(mg.Microseconds()), "guarded-µs")
	b.ReportMetric(float64(mp.Microseconds()), "unguarded-µs")
	b.ReportMetric(ratio, "ratio")
	b.Logf("a foreground %.40q at %s (%d pairs): guarded median %v, unguarded %v, median paired ratio %.3f", command, level, len(tg), mg, mp, ratio)
}

func medianFloat(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
