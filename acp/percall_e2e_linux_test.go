package acp_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
)

// startTraced starts the daemon under `strace -f` (strings up to size
// bytes, the calls filter names), initialized as Zed, with no key and the
// sandbox set by sandboxEnv; it returns the daemon and the trace's path.
func startTraced(t *testing.T, size int, filter, sandboxEnv string) (*daemon, string) {
	t.Helper()
	strace, err := exec.LookPath("strace")
	if err != nil {
		skipOrFail(t, "strace is not installed: %v", err)
	}
	bin := acptest.BuildBinary(t)
	state, trace := t.TempDir(), filepath.Join(t.TempDir(), "trace")
	args := []string{"-f", "-qq", "-s", strconv.Itoa(size), "-e", filter, "-o", trace, bin}
	a := acptest.Start(t, strace, args, []string{"DSH_STATE_DIR=" + state, "DSH_API_KEY=", "DEEPSEEK_API_KEY=",
		"DSH_LOG_LEVEL=error", sandboxEnv})
	if err := a.Call(ctxT(t), "initialize", acptest.InitializeParams(acptest.ZedCapabilities()), nil); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return &daemon{Agent: a, t: t, stateDir: state}, trace
}

// endTrace ends the traced daemon d (stdin closed, a clean exit) and
// returns its trace's lines.
func endTrace(t *testing.T, d *daemon, trace string) []string {
	t.Helper()
	d.CloseStdin()
	if err := d.Wait(ctxT(t)); err != nil {
		t.Fatalf("daemon exit: %v", err)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(b), "\n")
}

// traceLine is one line of `strace -f -o`: the pid, then the call.
var traceLine = regexp.MustCompile(`^\d+\s+(\w+)\((\d+)?`)

// TestBangTurnJournalWrites traces (strace) the daemon through a typed
// `!true` and checks what its journal costs on the way to the final card:
// the turn's four records (prompt, call, result, turn end) take two writes,
// and every record is written before the card that shows it (the result
// before the final card). (The fsyncs run on the journal's own goroutine,
// so a trace cannot tell one on the response path from a background one of
// the turn before; replay's tests hold them to the background.)
func TestBangTurnJournalWrites(t *testing.T) {
	d, trace := startTraced(t, 4096, "trace=openat,write", "DSH_SANDBOX=off")
	a := d.Agent
	sid := d.newSession(t.TempDir())
	const marker = "percall-marker"
	for _, cmd := range []string{"!true", "!true # " + marker} {
		var r struct {
			StopReason string `json:"stopReason"`
		}
		if err := a.Call(ctxT(t), "session/prompt", promptParams(sid, cmd), &r); err != nil || r.StopReason != "end_turn" {
			t.Fatalf("%s: %v, stopReason %q", cmd, err, r.StopReason)
		}
	}
	calls := traceTurn(t, endTrace(t, d, trace), sid, marker)
	writes := 0
	resultWritten, finalCard := false, false
	for _, c := range calls {
		switch {
		case c.journal && c.name == "write":
			writes++
			resultWritten = resultWritten || strings.Contains(c.line, `\"type\":\"tool_result\"`)
		case c.fd == "1" && c.name == "write" && strings.Contains(c.line, `terminal_exit`):
			finalCard = true
			if !resultWritten {
				t.Errorf("the final card went out before the result was journaled: %s", c.line)
			}
		}
	}
	if !finalCard {
		t.Fatalf("no final card in the traced turn:\n%s", dumpCalls(calls))
	}
	if writes != 2 {
		t.Errorf("the turn took %d journal writes, want 2:\n%s", writes, dumpCalls(calls))
	}
}

type tracedCall struct {
	name, fd string
	journal  bool
	line     string
}

// traceTurn returns the calls of the traced turn whose prompt holds marker:
// from the journal write holding it to the write of the prompt's reply.
func traceTurn(t *testing.T, lines []string, sid, marker string) []tracedCall {
	t.Helper()
	journalFD := ""
	var out []tracedCall
	in := false
	for _, l := range lines {
		m := traceLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		name, fd := m[1], m[2]
		if name == "openat" && strings.Contains(l, sid+".jsonl") {
			if i := strings.LastIndex(l, "= "); i >= 0 {
				journalFD = strings.TrimSpace(l[i+2:])
			}
			continue
		}
		c := tracedCall{name: name, fd: fd, journal: fd != "" && fd == journalFD, line: l}
		if !in && c.journal && name == "write" && strings.Contains(l, marker) {
			in = true
		}
		if !in {
			continue
		}
		out = append(out, c)
		if fd == "1" && name == "write" && strings.Contains(l, `stopReason`) {
			return out
		}
	}
	if journalFD == "" {
		t.Fatalf("the trace shows no open of the session's journal %s.jsonl", sid)
	}
	t.Fatalf("the trace holds no journal write of %q followed by the prompt's reply", marker)
	return nil
}

func dumpCalls(calls []tracedCall) string {
	var b strings.Builder
	for _, c := range calls {
		l := c.line
		if len(l) > 160 {
			l = l[:160] + "…"
		}
		fmt.Fprintln(&b, l)
	}
	return b.String()
}
