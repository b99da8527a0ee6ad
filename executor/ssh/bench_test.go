package ssh

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/sshdtest"
)

const (
	// overheadTarget is the acceptance target: a foreground `true` through
	// the executor at most 1.3× a bare session exec on an open connection.
	overheadTarget = 1.3
	minPairs       = 200
)

// BenchmarkForegroundTrue compares Run("true") over the executor's
// connection with the library's own session exec of `true` on another open
// connection to the same sshd (the ControlMaster-style baseline: no dial,
// one channel, the login shell runs the command). Each iteration runs one
// of each, alternating which goes first, so load hits both alike; it
// reports both medians and the median of the per-pair ratios.
func BenchmarkForegroundTrue(b *testing.B) {
	srv := sshdtest.Start(b)
	cfg := Config{
		Target: Target{User: srv.User, Host: srv.Host, Port: srv.Port}, Identity: srv.ClientKey,
		KnownHosts: srv.KnownHosts, RemoteStateDir: b.TempDir(),
	}
	cfg.Engine.StateDir = b.TempDir()
	e, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	client, err := ssh.Dial("tcp", srv.Addr, &ssh.ClientConfig{
		User: srv.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(srv.ClientSigner)},
		HostKeyCallback: ssh.FixedHostKey(srv.HostKey),
	})
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	spec := executor.Spec{Command: "true", Workdir: "/", Timeout: time.Minute}
	bare := func() (time.Duration, error) {
		start := time.Now()
		s, err := client.NewSession()
		if err != nil {
			return 0, err
		}
		defer s.Close()
		err = s.Run("true")
		return time.Since(start), err
	}
	ours := func() (time.Duration, error) {
		start := time.Now()
		res, err := e.Run(context.Background(), spec, nil)
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("exit %d", res.ExitCode)
		}
		return time.Since(start), err
	}
	if _, err := ours(); err != nil { // connect outside the measurement
		b.Fatal(err)
	}
	b.ResetTimer()
	n := max(b.N, minPairs)
	mo, mb, ratio, err := acptest.PairedMedians(n, ours, bare)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(mb.Microseconds()), "bare-µs")
	b.ReportMetric(float64(mo.Microseconds()), "run-µs")
	b.ReportMetric(ratio, "ratio")
	b.Logf("`true` over ssh (%d pairs): Run median %v, bare session exec median %v, median ratio %.2f (target ≤ %.2f)",
		n, mo, mb, ratio, overheadTarget)
}
