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

// BenchmarkGuardOverhead: a foreground `true` at workspace level, started
// from the guard thread and (the guard taken away) from the spawn thread,
// paired call by call; the median of the per-pair ratios is the guard's
// cost per call.
func BenchmarkGuardOverhead(b *testing.B) {
	requireBwrap(b)
	ws := b.TempDir()
	run := func(unguarded bool) func() error {
		sp, err := NewSpawner(Config{Config: local.Config{StateDir: b.TempDir()}, Home: testHome(b)})
		if err != nil {
			b.Fatal(err)
		}
		if unguarded {
			sp.guard = nil
		}
		e, err := engine.New(sp, engine.Config{StateDir: sp.stateDir})
		if err != nil {
			b.Fatal(err)
		}
		executortest.ShutDownAtEnd(b, e, 20*time.Second)
		spec, err := e.Resolve(executor.Request{Command: "true", SessionCwd: ws, Level: executor.LevelWorkspace})
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
	for i := range max(b.N, 60) {
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
	b.Logf("a foreground `true` at workspace (%d pairs): guarded median %v, unguarded %v, median paired ratio %.3f", len(tg), mg, mp, ratio)
}

func medianFloat(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
