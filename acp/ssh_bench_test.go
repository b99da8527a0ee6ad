package acp_test

import (
	"context"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/sshdtest"
)

// BenchmarkSSHDirectTrue is `!true` through the real daemon with
// --executor ssh://… (prompt sent → reply, the final card included)
// against the library's own session exec of `true` on another open
// connection to the same sshd (the ControlMaster-style baseline). Each
// iteration runs one of each, alternating which goes first; it reports
// both medians and the median of the per-pair ratios (target ≤ 1.3×).
func BenchmarkSSHDirectTrue(b *testing.B) {
	srv := sshdtest.StartWith(b, sshdtest.Options{SetEnv: []string{"XDG_STATE_HOME=" + b.TempDir()}})
	bin := acptest.BuildBinary(b)
	a := acptest.Start(b, bin, sshArgs(srv, ""), []string{"DSH_STATE_DIR=" + b.TempDir(), "DSH_API_KEY=", "DEEPSEEK_API_KEY=", "DSH_LOG_LEVEL=error"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var init map[string]any
	if err := a.Call(ctx, "initialize", acptest.InitializeParams(acptest.ZedCapabilities()), &init); err != nil {
		b.Fatal(err)
	}
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	if err := a.Call(ctx, "session/new", map[string]any{"cwd": b.TempDir(), "mcpServers": []any{}}, &sess); err != nil {
		b.Fatal(err)
	}
	client, err := ssh.Dial("tcp", srv.Addr, &ssh.ClientConfig{
		User: srv.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(srv.ClientSigner)},
		HostKeyCallback: ssh.FixedHostKey(srv.HostKey),
	})
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
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
		var r map[string]any
		err := a.Call(ctx, "session/prompt", promptParams(sess.SessionID, "!true"), &r)
		return time.Since(start), err
	}
	if _, err := ours(); err != nil { // connect outside the measurement
		b.Fatal(err)
	}
	b.ResetTimer()
	n := max(b.N, 200)
	mo, mb, ratio, err := acptest.PairedMedians(n, ours, bare)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(mb.Microseconds()), "bare-µs")
	b.ReportMetric(float64(mo.Microseconds()), "direct-µs")
	b.ReportMetric(ratio, "ratio")
	b.Logf("`!true` over ssh through the daemon (%d pairs): median %v, bare session exec median %v, median ratio %.2f (target ≤ 1.30)",
		n, mo, mb, ratio)
}
