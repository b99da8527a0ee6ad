package acp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
)

// A `!` command in a terminal-capable client (Zed) is one terminal card:
// tool_call with terminal_info and terminal content, live terminal_output,
// and a final update carrying the status and terminal_exit.
func TestDirectCommandTerminalCard(t *testing.T) {
	d := startDaemon(t, acptest.ZedCapabilities(), nil)
	cwd := t.TempDir()
	sid := d.newSession(cwd)
	command := "echo hello; echo oops >&2; exit 3"
	if got := d.prompt(sid, "!"+command); got != "end_turn" {
		t.Fatalf("stopReason %q", got)
	}
	us := decodeUpdates(t, d.Updates(sid))
	c := onlyCard(t, us)
	id := c.open.ToolCallID
	if c.open.Title != command || c.open.ToolKind != "execute" || c.open.Status != "in_progress" {
		t.Errorf("open %+v", c.open)
	}
	if c.open.Meta.Info == nil || c.open.Meta.Info.TerminalID != id || c.open.Meta.Info.Cwd != cwd {
		t.Errorf("terminal_info %+v", c.open.Meta.Info)
	}
	var items []struct{ Type, TerminalID string }
	_ = json.Unmarshal(c.open.Content, &items)
	if n := len(items); n == 0 || items[n-1].Type != "terminal" || items[n-1].TerminalID != id {
		t.Errorf("content %s lacks the terminal", c.open.Content)
	}
	out := strings.Join(c.outputs, "")
	if len(c.outputs) == 0 || !strings.Contains(out, "hello\n") || !strings.Contains(out, "oops\n") {
		t.Errorf("terminal_output %q", c.outputs)
	}
	if c.final == nil || c.final.Status != "failed" || c.final.Meta.Exit == nil ||
		c.final.Meta.Exit.ExitCode == nil || *c.final.Meta.Exit.ExitCode != 3 || c.final.Meta.Exit.TerminalID != id {
		t.Fatalf("final %+v", c.final)
	}
	if last := c.updates[len(c.updates)-1]; last.Status != "failed" {
		t.Errorf("an update follows the final one: %+v", last)
	}
}

// Without _meta.terminal_output the card carries the output as a fenced
// console block, and no terminal _meta at all.
func TestDirectCommandFallbackCard(t *testing.T) {
	d := startDaemon(t, acptest.PlainCapabilities(), nil)
	sid := d.newSession(t.TempDir())
	if got := d.prompt(sid, "!echo 'three ``` ticks'"); got != "end_turn" {
		t.Fatalf("stopReason %q", got)
	}
	c := onlyCard(t, decodeUpdates(t, d.Updates(sid)))
	for _, u := range append([]update{c.open}, c.updates...) {
		if u.Meta.Info != nil || u.Meta.Output != nil || u.Meta.Exit != nil {
			t.Errorf("terminal _meta sent to a client without the capability: %+v", u)
		}
	}
	if c.final == nil || c.final.Status != "completed" {
		t.Fatalf("final %+v", c.final)
	}
	texts := strings.Join(c.contentTexts(), "\n")
	if !strings.Contains(texts, "````console\nthree ``` ticks\n") {
		t.Errorf("content %q lacks a console block with a longer fence", texts)
	}
}

// session/cancel stops a running command's whole process group, closes its
// card (failed, with terminal_exit) and answers the prompt "cancelled".
func TestCancelRunningCommand(t *testing.T) {
	d := startDaemon(t, acptest.ZedCapabilities(), nil)
	sid := d.newSession(t.TempDir())
	marker := acptest.NewMarker()
	reply := make(chan string, 1)
	go func() {
		var r struct {
			StopReason string `json:"stopReason"`
		}
		err := d.Call(context.Background(), "session/prompt", promptParams(sid, "!export M="+marker+"; sleep 600 & sleep 600"), &r)
		if err != nil {
			r.StopReason = err.Error()
		}
		reply <- r.StopReason
	}()
	if _, err := d.WaitUpdate(ctxT(t), sid, func(u json.RawMessage) bool { return acptest.UpdateKind(u) == "tool_call" }); err != nil {
		t.Fatal(err)
	}
	waitMarkedProcs(t, marker, 2)
	start := time.Now()
	if err := d.Notify(ctxT(t), "session/cancel", map[string]any{"sessionId": sid}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-reply:
		t.Logf("cancel answered in %v", time.Since(start))
		if got != "cancelled" {
			t.Fatalf("stopReason %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("prompt not answered after cancel")
	}
	c := onlyCard(t, decodeUpdates(t, d.Updates(sid)))
	if c.final == nil || c.final.Status != "failed" || c.final.Meta.Exit == nil {
		t.Fatalf("final %+v", c.final)
	}
	if left, err := acptest.WaitNoProcsWithMarker(ctxT(t), marker); err != nil {
		t.Fatalf("survivors %+v: %v", left, err)
	}
}

// A cancel followed at once by a new prompt applies only to what was in
// flight when the cancel arrived: the new prompt is never cancelled. (The
// SDK alone gets this wrong about 1 in 100 times.)
func TestCancelThenPromptNeverCancelsTheNewPrompt(t *testing.T) {
	// Unsandboxed: 1000 sandboxed commands would take this test past its
	// deadline on a slow machine, and the wire order is the same at every level.
	d := startDaemon(t, acptest.ZedCapabilities(), nil, "DSH_LOG_LEVEL=warn", "DSH_SANDBOX=off")
	sid := d.newSession(t.TempDir())
	ctx := ctxT(t)
	wrong, ran, start := 0, 0, time.Now()
	for ; ran < 1000 && time.Since(start) < roundsBudget; ran++ {
		if err := d.Notify(ctx, "session/cancel", map[string]any{"sessionId": sid}); err != nil {
			t.Fatal(err)
		}
		var r struct {
			StopReason string `json:"stopReason"`
		}
		if err := d.Call(ctx, "session/prompt", promptParams(sid, "!true"), &r); err != nil {
			t.Fatal(err)
		}
		if r.StopReason != "end_turn" {
			wrong++
		}
	}
	if wrong != 0 {
		t.Fatalf("%d of %d prompts sent right after a cancel were cancelled", wrong, ran)
	}
	if ran < minRounds {
		t.Fatalf("only %d rounds ran within %v (want at least %d): the machine is too slow to test this", ran, roundsBudget, minRounds)
	}
	t.Logf("%d prompts right after a cancel, none cancelled", ran)
}

// With a turn in flight, cancel+prompt back to back cancels the running turn
// and runs the new one.
func TestCancelInFlightThenPrompt(t *testing.T) {
	d := startDaemon(t, acptest.ZedCapabilities(), nil)
	sid := d.newSession(t.TempDir())
	for i := 0; i < 10; i++ {
		first := make(chan string, 1)
		go func() {
			var r struct {
				StopReason string `json:"stopReason"`
			}
			_ = d.Call(context.Background(), "session/prompt", promptParams(sid, "!sleep 600"), &r)
			first <- r.StopReason
		}()
		d.waitFor(func() bool { return d.count(sid, "tool_call", `"sleep 600"`) == i+1 })
		line := fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q}}`+"\n"+
			`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"!true"}]}}`+"\n", sid, 900000+i, sid)
		if err := d.WriteRaw([]byte(line)); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`"id":%d`, 900000+i)
		msg, err := d.WaitInbound(ctxT(t), func(m json.RawMessage) bool { return bytes.Contains(m, []byte(want)) })
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(msg, []byte(`"stopReason":"end_turn"`)) {
			t.Fatalf("second prompt: %s", msg)
		}
		if got := <-first; got != "cancelled" {
			t.Fatalf("first prompt: %q", got)
		}
	}
}

// errorReply waits for the error reply with the given id (a JSON literal,
// "null" for replies the guard could not tie to a request) and code.
func (d *daemon) errorReply(id string, code int) json.RawMessage {
	d.t.Helper()
	msg, err := d.WaitInbound(ctxT(d.t), func(m json.RawMessage) bool {
		var r struct {
			ID    json.RawMessage `json:"id"`
			Error *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		return json.Unmarshal(m, &r) == nil && r.Error != nil && r.Error.Code == code && string(r.ID) == id
	})
	if err != nil {
		d.t.Fatalf("no error %d for id %s: %v", code, id, err)
	}
	return msg
}

// Bad input gets a clear error and the connection keeps serving.
func TestMalformedInputKeepsServing(t *testing.T) {
	d := startDaemon(t, acptest.ZedCapabilities(), []string{"--max-line", "65536"})
	if err := d.WriteRaw([]byte("{not json\n")); err != nil {
		t.Fatal(err)
	}
	d.errorReply("null", -32700)
	if err := d.WriteRaw([]byte(`[{"jsonrpc":"2.0","id":5,"method":"initialize","params":{}}]` + "\n")); err != nil {
		t.Fatal(err)
	}
	d.errorReply("null", -32600)
	if err := d.WriteRaw([]byte(`{"jsonrpc":"2.0","id":{"x":1},"method":"session/new","params":{}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	d.errorReply("null", -32600)
	long := `{"jsonrpc":"2.0","id":77,"method":"session/new","params":{"cwd":"` + strings.Repeat("a", 200000) + `"}}` + "\n"
	if err := d.WriteRaw([]byte(long)); err != nil {
		t.Fatal(err)
	}
	d.errorReply("77", -32600)

	if err := d.Call(ctxT(t), "no/such_method", map[string]any{}, nil); rpcCode(err) != -32601 {
		t.Errorf("unknown method: %v", err)
	}
	if err := d.Call(ctxT(t), "session/new", map[string]any{"cwd": 5}, nil); rpcCode(err) != -32602 {
		t.Errorf("wrong param type: %v", err)
	}
	for _, cwd := range []string{"relative/dir", "/definitely/not/here", "/etc/hostname"} {
		err := d.Call(ctxT(t), "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}, nil)
		if rpcCode(err) != -32602 || !strings.Contains(err.Error(), "cwd") {
			t.Errorf("session/new cwd %q: %v", cwd, err)
		}
	}
	err := d.Call(ctxT(t), "session/prompt", promptParams("no-such-session", "!true"), nil)
	if rpcCode(err) != -32602 || !strings.Contains(err.Error(), "unknown session") {
		t.Errorf("prompt to an unknown session: %v", err)
	}
	err = d.Call(ctxT(t), "session/load", map[string]any{"sessionId": "x", "cwd": "rel", "mcpServers": []any{}}, nil)
	if rpcCode(err) != -32602 {
		t.Errorf("load with a relative cwd: %v", err)
	}
	// Still serving: a real session and command work.
	sid := d.newSession(t.TempDir())
	if got := d.prompt(sid, "!echo still here"); got != "end_turn" {
		t.Fatalf("stopReason %q", got)
	}
}

// On stdin EOF the daemon kills what runs, and exits 0 promptly.
func TestStdinEOFKillsRunningCommand(t *testing.T) {
	d := startDaemon(t, acptest.ZedCapabilities(), nil)
	sid := d.newSession(t.TempDir())
	marker := acptest.NewMarker()
	go func() {
		_ = d.Call(context.Background(), "session/prompt", promptParams(sid, "!export M="+marker+"; trap '' TERM; sleep 600 & wait"), nil)
	}()
	waitMarkedProcs(t, marker, 2)
	start := time.Now()
	if err := d.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	if err := d.Wait(ctxT(t)); err != nil {
		t.Fatalf("exit: %v", err)
	}
	t.Logf("exited %v after EOF (TERM ignored: grace then KILL)", time.Since(start))
	if left, err := acptest.ProcsWithMarker(marker); err != nil || len(left) > 0 {
		t.Fatalf("survivors after exit: %+v %v", left, err)
	}
}

// SIGTERM ends the daemon the way stdin EOF does: commands killed, exit 0.
func TestSIGTERMKillsRunningCommand(t *testing.T) {
	d := startDaemon(t, acptest.ZedCapabilities(), nil)
	sid := d.newSession(t.TempDir())
	marker := acptest.NewMarker()
	go func() {
		_ = d.Call(context.Background(), "session/prompt", promptParams(sid, "!export M="+marker+"; sleep 600"), nil)
	}()
	waitMarkedProcs(t, marker, 1)
	if err := syscall.Kill(d.Pid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := d.Wait(ctxT(t)); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	if left, err := acptest.WaitNoProcsWithMarker(ctxT(t), marker); err != nil {
		t.Fatalf("survivors %+v: %v", left, err)
	}
}

// A client that stops reading (stdout closed: EPIPE) ends the daemon too,
// instead of SIGPIPE killing it mid-cleanup.
func TestBrokenStdoutEndsTheDaemon(t *testing.T) {
	bin := acptest.BuildBinary(t)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "DSH_STATE_DIR="+t.TempDir(), "DSH_API_KEY=", "DEEPSEEK_API_KEY=")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	fmt.Fprintf(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`+"\n")
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	out.Close() // the client goes away without closing our stdin
	fmt.Fprintf(in, `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`+"\n", t.TempDir())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v (want 0, not a SIGPIPE death)", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("daemon still running after its stdout broke")
	}
}
