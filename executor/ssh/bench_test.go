package ssh

import (
	"context"
	"fmt"
	"os"
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

// BenchmarkConfinedTrue compares Run("true") at workspace with the same at
// LevelOff, in a git repository with the protected names absent (the
// wrapper makes and removes placeholders each time), paired run by run;
// it also reports the read-only level's median. It needs the host's
// bubblewrap.
func BenchmarkConfinedTrue(b *testing.B) {
	root := b.TempDir()
	ws, state := root+"/ws", root+"/state"
	for _, d := range []string{ws + "/.git/objects", ws + "/.git/refs", state} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(ws+"/.git/HEAD", []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	srv := sshdtest.Start(b)
	cfg := Config{
		Target: Target{User: srv.User, Host: srv.Host, Port: srv.Port}, Identity: srv.ClientKey,
		KnownHosts: srv.KnownHosts, RemoteStateDir: state,
	}
	cfg.Engine.StateDir = b.TempDir()
	e, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	at := func(level executor.Level) func() (time.Duration, error) {
		spec := executor.Spec{Command: "true", Workdir: ws, Workspace: ws, Timeout: time.Minute, Level: level}
		return func() (time.Duration, error) {
			start := time.Now()
			res, err := e.Run(context.Background(), spec, nil)
			if err == nil && res.ExitCode != 0 {
				err = fmt.Errorf("exit %d: %s", res.ExitCode, res.Combined)
			}
			return time.Since(start), err
		}
	}
	if _, err := at(executor.LevelWorkspace)(); err != nil { // connect and probe outside the measurement
		b.Skipf("the host's sandbox does not run here: %v", err)
	}
	b.ResetTimer()
	n := max(b.N, 40)
	mw, mo, ratio, err := acptest.PairedMedians(n, at(executor.LevelWorkspace), at(executor.LevelOff))
	if err != nil {
		b.Fatal(err)
	}
	mr, _, _, err := acptest.PairedMedians(n, at(executor.LevelReadOnly), at(executor.LevelOff))
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(mw.Microseconds()), "workspace-µs")
	b.ReportMetric(float64(mr.Microseconds()), "read-only-µs")
	b.ReportMetric(float64(mo.Microseconds()), "off-µs")
	b.Logf("`true` on the host (%d pairs): workspace %v, read-only %v, off %v; workspace/off median ratio %.2f", n, mw, mr, mo, ratio)
}
