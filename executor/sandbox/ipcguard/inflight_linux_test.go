package ipcguard

import (
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestInflightBounded: connects the supervisor is still answering (each
// may hold a thread of the daemon, e.g. blocked on a listener that never
// accepts) are bounded; one over the bound fails at once with EAGAIN, and
// the held ones complete once released.
func TestInflightBounded(t *testing.T) {
	perl, err := exec.LookPath("perl")
	if err != nil {
		skipOrFail(t, "perl is not installed")
	}
	name := "ipcguard-inflight-" + time.Now().Format("150405.000000")
	l, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
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
	release := make(chan struct{})
	g.maxInflight, g.hold = 2, func() { <-release }
	th := newThread(t, g)
	// Five children connect at once, each printing its result. The filter
	// reaches perl: it is started from th.
	// (The connect builtin: IO::Socket reads EAGAIN as a connect under way.)
	script := `for (1..5) { if (!fork) { socket($s, AF_UNIX, SOCK_STREAM, 0) or die; print((connect($s, pack_sockaddr_un("\0` + name + `")) ? "ok" : "$!"), "\n"); exit 0 } } 1 while wait != -1;`
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var p *os.Process
	th.do(func() {
		p, err = os.StartProcess(perl, []string{"perl", "-MSocket", "-e", script}, &os.ProcAttr{Files: []*os.File{nil, w, os.Stderr}})
	})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for g.Answered() < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := g.inflight.Load(); n != 2 {
		t.Errorf("%d connects in flight, want 2 (the bound)", n)
	}
	close(release)
	out, _ := io.ReadAll(r)
	p.Wait()
	res := string(out)
	t.Logf("results: %q", res)
	if strings.Count(res, "Resource temporarily unavailable") != 3 || strings.Count(res, "ok") != 2 {
		t.Errorf("want 3 EAGAIN over the bound and the 2 held connects made, got %q", res)
	}
}
