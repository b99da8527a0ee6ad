package ipcguard

import (
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"testing"
	"time"
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

// BenchmarkSandboxStart: `bwrap … bash -c true` (the no-network sandbox)
// started from a plain locked thread and from a guarded one, paired call
// by call. The guard costs nothing per call that does not connect.
func BenchmarkSandboxStart(b *testing.B) {
	requireTools(b, -1)
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Fatal(err)
	}
	g := New(Config{})
	defer g.Close()
	plain, guarded := newThread(b, nil), newThread(b, g)
	ws := b.TempDir()
	args := append(append([]string{"bwrap"}, bwrapArgs(nil, ws)...), "--", "bash", "-c", "true")
	start := func(th thread) func() error {
		return func() (err error) {
			th.do(func() {
				var p *os.Process
				if p, err = os.StartProcess(bwrap, args, &os.ProcAttr{Files: []*os.File{nil, nil, os.Stderr}}); err == nil {
					_, err = p.Wait()
				}
			})
			return err
		}
	}
	b.ResetTimer()
	mp, mg, ratio := pairedMedian(b, max(b.N, 50), start(plain), start(guarded))
	b.ReportMetric(float64(mp.Microseconds()), "plain-µs")
	b.ReportMetric(float64(mg.Microseconds()), "guarded-µs")
	b.ReportMetric(ratio, "ratio")
	if n := g.Answered(); n != 0 {
		b.Errorf("bwrap … bash -c true made %d connects", n)
	}
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
