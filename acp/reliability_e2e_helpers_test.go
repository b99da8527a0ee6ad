package acp_test

import (
	"os"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

// Helpers of the reliability tests (issue 13's fork bomb, spill failures,
// redaction): they can run against a prebuilt binary, so a test can be
// checked to fail on an older commit.

// binaryEnv names a prebuilt daemon binary to test instead of building
// this tree's (to check that a test fails on an older commit).
const binaryEnv = "DSH_E2E_BINARY"

// daemonBinary is the binary under test: binaryEnv's, else this tree's.
func daemonBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv(binaryEnv); bin != "" {
		return bin
	}
	return acptest.BuildBinary(t)
}

// skipOrFail skips with why, or fails when CI=true (a missing component
// must not pass silently there).
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true: "+format, args...)
	}
	t.Skipf(format, args...)
}

// startModelDaemon runs bin (the daemon, or a wrapper that execs it) with
// the state directory state and the scripted model, and initializes it.
func startModelDaemon(t *testing.T, bin, state string, model *llmtest.Server, args []string, env ...string) *daemon {
	t.Helper()
	base := []string{"DSH_STATE_DIR=" + state, "DEEPSEEK_API_KEY=", "DSH_LOG_LEVEL=debug",
		"DSH_BASE_URL=" + model.URL(), "DSH_API_KEY=test-key"}
	a := acptest.Start(t, bin, args, append(base, env...))
	d := &daemon{Agent: a, t: t, stateDir: state}
	var init map[string]any
	if err := a.Call(ctxT(t), "initialize", acptest.InitializeParams(acptest.ZedCapabilities()), &init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return d
}

// newSessionOnly opens a session without waiting for the updates that
// follow the reply (an older binary under binaryEnv sends none).
func (d *daemon) newSessionOnly(cwd string) string {
	d.t.Helper()
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if err := d.Call(ctxT(d.t), "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}, &r); err != nil {
		d.t.Fatalf("session/new: %v", err)
	}
	return r.SessionID
}

// modelSaw is everything the model was sent in its last request.
func modelSaw(t *testing.T, model *llmtest.Server) string {
	t.Helper()
	reqs := model.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model was never asked")
	}
	var seen strings.Builder
	for _, m := range reqs[len(reqs)-1].Messages {
		seen.WriteString(m.Content)
		seen.WriteString("\n")
	}
	return seen.String()
}
