package ipcguard

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// thread is a locked OS thread that runs what it is handed; guarded, it
// holds the guard's filter first.
type thread chan func()

func newThread(tb testing.TB, g *Guard) thread {
	tb.Helper()
	th := make(thread)
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		var err error
		if g != nil {
			err = g.Install()
		}
		ready <- err
		for f := range th {
			f()
		}
	}()
	if err := <-ready; err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { close(th) })
	return th
}

func (th thread) do(f func()) {
	done := make(chan struct{})
	th <- func() { f(); close(done) }
	<-done
}

// run starts path with args and attr from th and waits for it.
func (th thread) run(path string, args []string, attr *os.ProcAttr) (st *os.ProcessState, err error) {
	th.do(func() {
		var p *os.Process
		if p, err = os.StartProcess(path, args, attr); err == nil {
			st, err = p.Wait()
		}
	})
	return st, err
}

// pairedMedian runs a and b alternately n times each (the order rotating)
// and returns their medians and the median of the per-pair ratios b/a.
func pairedMedian(tb testing.TB, n int, a, b func() error) (ma, mb time.Duration, ratio float64) {
	tb.Helper()
	var ta, tbs []time.Duration
	var ratios []float64
	for i := range n {
		var da, db time.Duration
		for k := range 2 {
			f, d := a, &da
			if (i+k)%2 == 1 {
				f, d = b, &db
			}
			start := time.Now()
			if err := f(); err != nil {
				tb.Fatal(err)
			}
			*d = time.Since(start)
		}
		ta, tbs = append(ta, da), append(tbs, db)
		ratios = append(ratios, float64(db)/float64(da))
	}
	slices.Sort(ta)
	slices.Sort(tbs)
	slices.Sort(ratios)
	return ta[n/2], tbs[n/2], ratios[n/2]
}

// bwrapTrue returns what starts `bwrap … bash -c true` (the no-network
// sandbox, in a workspace of its own) from a thread and waits for it.
func bwrapTrue(b *testing.B) func(thread) func() error {
	b.Helper()
	requireTools(b, -1)
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Fatal(err)
	}
	args := append(append([]string{"bwrap"}, bwrapArgs(nil, b.TempDir())...), "--", "bash", "-c", "true")
	return func(th thread) func() error {
		return func() error {
			_, err := th.run(bwrap, args, &os.ProcAttr{Files: []*os.File{nil, nil, os.Stderr}})
			return err
		}
	}
}

// BenchmarkSandboxStart: `bwrap … bash -c true` (the no-network sandbox)
// started from a plain locked thread and from a guarded one, paired call
// by call. The guard costs nothing per call that does not connect.
func BenchmarkSandboxStart(b *testing.B) {
	start := bwrapTrue(b)
	g := New(Config{})
	defer g.Close()
	plain, guarded := newThread(b, nil), newThread(b, g)
	b.ResetTimer()
	mp, mg, ratio := pairedMedian(b, max(b.N, 50), start(plain), start(guarded))
	b.ReportMetric(float64(mp.Microseconds()), "plain-µs")
	b.ReportMetric(float64(mg.Microseconds()), "guarded-µs")
	b.ReportMetric(ratio, "ratio")
	// bubblewrap's set-up writes (let through) and bash's open of /dev/tty.
	b.ReportMetric(float64(g.Answered())/float64(max(b.N, 50)), "answers/call")
}

// BenchmarkConnect: a loopback TCP connect from a plain thread and from a
// guarded one (which the supervisor makes on the thread's behalf), paired.
func BenchmarkConnect(b *testing.B) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	g := New(Config{})
	defer g.Close()
	plain, guarded := newThread(b, nil), newThread(b, g)
	addr := l.Addr().(*net.TCPAddr)
	connect := func(th thread) func() error {
		return func() (err error) {
			th.do(func() { err = rawConnect(addr) })
			return err
		}
	}
	b.ResetTimer()
	mp, mg, ratio := pairedMedian(b, max(b.N, 200), connect(plain), connect(guarded))
	b.ReportMetric(float64(mp.Microseconds()), "plain-µs")
	b.ReportMetric(float64(mg.Microseconds()), "guarded-µs")
	b.ReportMetric(ratio, "ratio")
}

// dropCaps takes every capability from the calling thread (only): a
// guarded thread of a root test process then calls as a sandboxed command
// does, and the supervisor makes its opens (a caller with capabilities is
// let through as a launcher).
func dropCaps() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	return unix.Capset(&hdr, &none[0])
}

// BenchmarkWriteOpen: open(O_WRONLY|O_CREAT|O_TRUNC) and close of a file,
// from a plain thread and from a guarded one (whose open the supervisor
// makes and hands back), both without capabilities, paired.
func BenchmarkWriteOpen(b *testing.B) {
	g := New(Config{})
	defer g.Close()
	plain, guarded := newThread(b, nil), newThread(b, g)
	for _, th := range []thread{plain, guarded} {
		var err error
		th.do(func() { err = dropCaps() })
		if err != nil {
			b.Fatal(err)
		}
	}
	dir := b.TempDir()
	open := func(th thread, name string) func() error {
		p := filepath.Join(dir, name)
		return func() (err error) {
			th.do(func() {
				var fd int
				if fd, err = unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644); err == nil {
					unix.Close(fd)
				}
			})
			return err
		}
	}
	before := g.Answered()
	b.ResetTimer()
	mp, mg, ratio := pairedMedian(b, max(b.N, 500), open(plain, "p"), open(guarded, "g"))
	b.ReportMetric(float64(mp.Nanoseconds())/1e3, "plain-µs")
	b.ReportMetric(float64(mg.Nanoseconds())/1e3, "guarded-µs")
	b.ReportMetric(ratio, "ratio")
	if g.Answered() == before {
		b.Error("the supervisor answered no open: the guarded thread was not judged")
	}
}

// BenchmarkGitCommit: a realistic write-heavy command in the no-network
// sandbox, started from a plain thread and from a guarded one, paired:
// git init, 500 files written, git add and git commit.
func BenchmarkGitCommit(b *testing.B) {
	requireTools(b, -1)
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Fatal(err)
	}
	g := New(Config{})
	defer g.Close()
	plain, guarded := newThread(b, nil), newThread(b, g)
	base := b.TempDir()
	script := `export HOME=$PWD GIT_CONFIG_NOSYSTEM=1; rm -rf r && git init -q r && cd r && for i in $(seq 500); do echo "line $i" > f$i.txt; done && git add . && git -c user.email=a@b -c user.name=a commit -qm m`
	start := func(th thread, name string) func() error {
		ws := filepath.Join(base, name)
		if err := os.MkdirAll(ws, 0o755); err != nil {
			b.Fatal(err)
		}
		args := append(append([]string{"bwrap"}, bwrapArgs(nil, ws)...), "--", "bash", "-c", script)
		return func() error {
			st, err := th.run(bwrap, args, &os.ProcAttr{Dir: ws, Files: []*os.File{nil, nil, os.Stderr}})
			if err == nil && !st.Success() {
				err = fmt.Errorf("git: %v", st)
			}
			return err
		}
	}
	before := g.Answered()
	b.ResetTimer()
	mp, mg, ratio := pairedMedian(b, max(b.N, 10), start(plain, "plain"), start(guarded, "guarded"))
	b.ReportMetric(float64(mp.Milliseconds()), "plain-ms")
	b.ReportMetric(float64(mg.Milliseconds()), "guarded-ms")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(float64(g.Answered()-before)/float64(max(b.N, 10)), "answers/run")
}

// BenchmarkFileRulesStart: `bwrap … bash -c true` from a thread with the
// whole filter and from one with the socket rules only (the filter before
// the file rules), paired: what the file rules add to a call (bubblewrap's
// set-up writes, let through, and bash's open of /dev/tty).
func BenchmarkFileRulesStart(b *testing.B) {
	start := bwrapTrue(b)
	whole, sockets := New(Config{}), New(Config{})
	sockets.rules = rules{sockets: true}
	defer whole.Close()
	defer sockets.Close()
	after, before := newThread(b, whole), newThread(b, sockets)
	b.ResetTimer()
	mb, ma, ratio := pairedMedian(b, max(b.N, 50), start(before), start(after))
	b.ReportMetric(float64(mb.Microseconds()), "sockets-only-µs")
	b.ReportMetric(float64(ma.Microseconds()), "whole-µs")
	b.ReportMetric(ratio, "ratio")
}
