package acp_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
)

// minBangCalls is the samples per side, whatever b.N is.
const minBangCalls = 60

// BenchmarkBangTrue times a typed `!true` through the real daemon over
// stdio — the prompt written, the command run, its card drawn and
// journaled, the reply read — with the session sandboxed (workspace) and
// unsandboxed (off), against `bwrap … bash -c true` started directly with
// the sandbox's arguments and a bare `bash -c true`, paired per iteration
// (the order rotates, so machine load hits all alike). It reports each
// median, the ratios sandboxed/direct bwrap and sandboxed/unsandboxed, and
// what the sandbox adds to a call against what bwrap adds to bash.
func BenchmarkBangTrue(b *testing.B) {
	needSandbox(b)
	bin := acptest.BuildBinary(b)
	ws := b.TempDir()
	bang := func(level string) func() error {
		a := acptest.Start(b, bin, nil, []string{"DSH_STATE_DIR=" + b.TempDir(), "DSH_API_KEY=", "DEEPSEEK_API_KEY=",
			"DSH_LOG_LEVEL=warn", "DSH_SANDBOX=" + level})
		ctx := context.Background()
		if err := a.Call(ctx, "initialize", acptest.InitializeParams(acptest.ZedCapabilities()), nil); err != nil {
			b.Fatal(err)
		}
		var s struct {
			SessionID string `json:"sessionId"`
		}
		if err := a.Call(ctx, "session/new", map[string]any{"cwd": ws, "mcpServers": []any{}}, &s); err != nil {
			b.Fatal(err)
		}
		return func() error {
			var r struct {
				StopReason string `json:"stopReason"`
			}
			if err := a.Call(ctx, "session/prompt", promptParams(s.SessionID, "!true"), &r); err != nil {
				return err
			}
			if r.StopReason != "end_turn" {
				return fmt.Errorf("stopReason %q", r.StopReason)
			}
			return nil
		}
	}
	home, _ := os.UserHomeDir()
	// The arguments executor/sandbox gives bwrap at workspace level (its
	// hidden and protected paths aside: none exist in this workspace).
	direct := func() error {
		args := []string{"--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
			"--unshare-user", "--disable-userns", "--cap-drop", "ALL", "--unshare-net",
			"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/run"}
		if home != "" {
			args = append(args, "--ro-bind", home, home)
		}
		args = append(args, "--bind", ws, ws, "--chdir", ws, "--", "bash", "-c", "true")
		return exec.Command("bwrap", args...).Run()
	}
	bare := func() error { return exec.Command("bash", "-c", "true").Run() }
	sides := []func() error{direct, bang("workspace"), bang("off"), bare}
	b.ResetTimer()
	n := max(b.N, minBangCalls)
	m, err := acptest.RotatedMedians(n, sides...)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	md, ms, mu, mb := m[0], m[1], m[2], m[3]
	// What the sandbox adds to a call, against what bwrap adds to bash.
	cost := float64(ms-mu) / float64(md-mb)
	b.ReportMetric(float64(md.Microseconds()), "bwrap-µs")
	b.ReportMetric(float64(mb.Microseconds()), "bash-µs")
	b.ReportMetric(float64(ms.Microseconds()), "sandboxed-µs")
	b.ReportMetric(float64(mu.Microseconds()), "unsandboxed-µs")
	b.ReportMetric(float64(ms)/float64(md), "sandboxed/bwrap")
	b.ReportMetric(float64(ms)/float64(mu), "sandboxed/unsandboxed")
	b.ReportMetric(cost, "added/bwrap-added")
	b.Logf("`!true` through the daemon (%d calls each): sandboxed %v, unsandboxed %v (%.2f×); directly: `bwrap … bash -c true` %v (sandboxed/direct %.2f×), `bash -c true` %v; the sandbox adds %v to a call, bwrap %v to bash (%.2f×)",
		n, ms, mu, float64(ms)/float64(mu), md, float64(ms)/float64(md), mb, ms-mu, md-mb, cost)
}
