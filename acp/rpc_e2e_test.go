package acp_test

// End-to-end tests of the RPC layer: what the daemon answers, in what order,
// whatever the wire throws at it and however its goroutines are scheduled.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/eventually"
)

// rawPrompt is a session/prompt line with a numeric id.
func rawPrompt(id int, sid, text string) string {
	p, _ := json.Marshal(promptParams(sid, text))
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":%s}`+"\n", id, p)
}

// rawCancel is a session/cancel line.
func rawCancel(sid string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q}}`+"\n", sid)
}

// stopReason waits for the reply to a raw request and returns its stop
// reason, or the whole reply when it is not a prompt result.
func stopReason(ctx context.Context, d *daemon, id int) (string, error) {
	msg, err := d.WaitResponse(ctx, fmt.Sprint(id))
	if err != nil {
		return "", fmt.Errorf("reply %d: %w", id, err)
	}
	var r struct {
		Result struct {
			StopReason string `json:"stopReason"`
		} `json:"result"`
	}
	if json.Unmarshal(msg, &r) != nil || r.Result.StopReason == "" {
		return string(msg), nil
	}
	return r.Result.StopReason, nil
}

// keepCoresBusy runs one busy-looping shell per CPU until the test ends, so
// the daemon's goroutines are scheduled late and in odd orders.
func keepCoresBusy(t *testing.T) {
	t.Helper()
	for range runtime.NumCPU() {
		spin := exec.Command("sh", "-c", "while :; do :; done")
		if err := spin.Start(); err != nil {
			t.Fatalf("start a spinner: %v", err)
		}
		t.Cleanup(func() {
			_ = spin.Process.Kill()
			_ = spin.Wait()
		})
	}
}

// Prompt A, session/cancel, prompt B, in one write: the cancel applies to A
// (which came before it on the wire) and never to B, however the SDK's
// handler goroutines are scheduled. Run across several sessions at once, with
// the daemon on one P and with both cores kept busy by spinners.
func TestBurstCancelBindsToTheEarlierPrompt(t *testing.T) {
	variants := []struct {
		name string
		env  []string
		busy bool
	}{
		{"default", nil, false},
		{"GOMAXPROCS=1", []string{"GOMAXPROCS=1"}, false},
		{"busy cores", nil, true},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) { burst(t, v.env, v.busy) })
	}
}

// roundsBudget bounds the time a wire-order test spends on its rounds: on a
// loaded machine (a race-built daemon on two shared cores) 1000 rounds can
// take longer than the test's deadline, so a test runs as many as fit, and
// at least minRounds, and checks every one it ran.
const (
	roundsBudget = 25 * time.Second
	minRounds    = 100
)

func burst(t *testing.T, env []string, busy bool) {
	const rounds, lanes = 1000, 8
	// Unsandboxed: a cancel this close to its command's start would reach
	// a sandbox still being set up, which a TERM cannot end (it is KILLed
	// after the grace period; executor/sandbox's known limits), and the
	// wire order under test is the same at every level.
	d := startDaemon(t, acptest.ZedCapabilities(), nil, append([]string{"DSH_LOG_LEVEL=warn", "DSH_SANDBOX=off"}, env...)...)
	sids := make([]string, lanes)
	for i := range sids {
		sids[i] = d.newSession(t.TempDir())
	}
	if busy {
		keepCoresBusy(t)
	}
	ctx := ctxT(t)
	start := time.Now()
	var stop atomic.Bool // the first wrong round stops every lane: on a bug each costs A's 5 s
	failures := make(chan string, lanes)
	done := make([]int, lanes) // rounds each lane finished: lane, lane+lanes, …
	var wg sync.WaitGroup
	for lane, sid := range sids {
		wg.Go(func() {
			for r := lane; r < rounds && !stop.Load() && time.Since(start) < roundsBudget; r += lanes {
				if msg := burstRound(ctx, d, sid, r); msg != "" {
					stop.Store(true)
					failures <- msg
					return
				}
				done[lane]++
			}
		})
	}
	wg.Wait()
	close(failures)
	for msg := range failures {
		t.Error(msg)
	}
	if t.Failed() {
		return
	}
	total := 0
	for _, n := range done {
		total += n
	}
	t.Logf("%d of %d rounds in %v", total, rounds, time.Since(start))
	if total < minRounds {
		t.Fatalf("only %d rounds ran within %v (want at least %d): the machine is too slow to test this", total, roundsBudget, minRounds)
	}

	for lane, sid := range sids {
		cs := map[string]*card{}
		for _, c := range cards(decodeUpdates(t, d.Updates(sid))) {
			cs[c.open.Title] = c
		}
		for k, r := 0, lane; k < done[lane]; k, r = k+1, r+lanes {
			want := fmt.Sprintf("ok-%d", r)
			c := cs["echo "+want]
			if c == nil || c.final == nil || c.final.Status != "completed" || !strings.Contains(strings.Join(c.outputs, ""), want) {
				t.Fatalf("round %d: prompt B's card is missing or incomplete: %+v", r, c)
			}
		}
	}
}

// burstRound runs one round and returns what went wrong, if anything.
func burstRound(ctx context.Context, d *daemon, sid string, r int) string {
	a, b := 1_000_000+2*r, 1_000_001+2*r
	burst := rawPrompt(a, sid, "!sleep 5") + rawCancel(sid) + rawPrompt(b, sid, fmt.Sprintf("!echo ok-%d", r))
	if err := d.WriteRaw([]byte(burst)); err != nil {
		return err.Error()
	}
	ra, err := stopReason(ctx, d, a)
	if err != nil {
		return err.Error()
	}
	rb, err := stopReason(ctx, d, b)
	if err != nil {
		return err.Error()
	}
	if ra != "cancelled" || rb != "end_turn" {
		return fmt.Sprintf("round %d: prompt A (before the cancel) ended %q, want cancelled; prompt B (after it) ended %q, want end_turn", r, ra, rb)
	}
	return ""
}

// initializeLine and newSessionLine are raw requests with string ids, which
// never collide with the numeric ids of the test client's own calls.
func initializeLine(id string, caps map[string]any) string {
	p, _ := json.Marshal(acptest.InitializeParams(caps))
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"initialize","params":%s}`+"\n", id, p)
}

func newSessionLine(id, cwd string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`+"\n", id, cwd)
}

// initialize and session/new written together: the session still knows the
// client's capabilities, so its command draws a terminal card.
func TestPipelinedInitializeAndNewSessionSeeCapabilities(t *testing.T) {
	bin := acptest.BuildBinary(t)
	for trial := range 8 {
		a := acptest.Start(t, bin, nil, []string{"DSH_STATE_DIR=" + t.TempDir(), "DSH_API_KEY=", "DEEPSEEK_API_KEY=", "GOMAXPROCS=1"})
		ctx := ctxT(t)
		if err := a.WriteRaw([]byte(initializeLine("i", acptest.ZedCapabilities()) + newSessionLine("n", t.TempDir()))); err != nil {
			t.Fatal(err)
		}
		msg, err := a.WaitResponse(ctx, `"n"`)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Result struct {
				SessionID string `json:"sessionId"`
			} `json:"result"`
		}
		if err := json.Unmarshal(msg, &r); err != nil || r.Result.SessionID == "" {
			t.Fatalf("session/new: %s", msg)
		}
		var pr struct {
			StopReason string `json:"stopReason"`
		}
		if err := a.Call(ctx, "session/prompt", promptParams(r.Result.SessionID, "!echo hi"), &pr); err != nil || pr.StopReason != "end_turn" {
			t.Fatalf("prompt: %v %+v", err, pr)
		}
		c := onlyCard(t, decodeUpdates(t, a.Updates(r.Result.SessionID)))
		if c.open.Meta.Info == nil || len(c.outputs) == 0 {
			t.Fatalf("trial %d: the card is not a terminal card (capabilities lost): %+v", trial, c.open)
		}
	}
}

// runToEOF runs the daemon on input (stdin ends after it) and returns every
// line it wrote, once it exited.
func runToEOF(t *testing.T, input string) []json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, acptest.BuildBinary(t))
	cmd.Env = append(os.Environ(), "DSH_STATE_DIR="+t.TempDir(), "DSH_API_KEY=", "DEEPSEEK_API_KEY=", "GORACE=atexit_sleep_ms=0")
	cmd.Stdin = strings.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("daemon: %v\n%s", err, stderr.String())
	}
	var lines []json.RawMessage
	for l := range bytes.Lines(stdout.Bytes()) {
		if !json.Valid(l) || !utf8.Valid(l) {
			t.Fatalf("not JSON text on stdout: %q", l)
		}
		lines = append(lines, bytes.TrimSpace(l))
	}
	return lines
}

// replyIDs is the set of ids the lines answer.
func replyIDs(lines []json.RawMessage) map[string]bool {
	ids := map[string]bool{}
	for _, l := range lines {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(l, &m) == nil && m.Method == "" && m.ID != nil {
			ids[string(m.ID)] = true
		}
	}
	return ids
}

// `printf '<initialize>\n<session/new>\n' | dsh-acp`: both are answered
// before the daemon exits at EOF; so are 15 pipelined requests.
func TestRequestsReadBeforeEOFAreAnswered(t *testing.T) {
	cwd := t.TempDir()
	for range 5 {
		got := replyIDs(runToEOF(t, initializeLine("i", acptest.ZedCapabilities())+newSessionLine("n", cwd)))
		if !got[`"i"`] || !got[`"n"`] {
			t.Fatalf("answered %v, want initialize and session/new", got)
		}
	}
	var in strings.Builder
	want := []string{}
	add := func(id, method, params string) {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%q,"method":%q,"params":%s}`+"\n", id, method, params)
		want = append(want, fmt.Sprintf("%q", id))
	}
	in.WriteString(initializeLine("r0", acptest.ZedCapabilities()))
	want = append(want, `"r0"`)
	for i := 1; i <= 6; i++ {
		add(fmt.Sprint("r", i), "session/new", fmt.Sprintf(`{"cwd":%q,"mcpServers":[]}`, cwd))
	}
	for i := 7; i <= 10; i++ {
		add(fmt.Sprint("r", i), "session/list", `{}`)
	}
	add("r11", "session/prompt", `{"sessionId":"nope","prompt":[{"type":"text","text":"!true"}]}`)
	add("r12", "session/prompt", `{"sessionId":"nope","prompt":[{"type":"text","text":"!true"}]}`)
	add("r13", "session/load", fmt.Sprintf(`{"sessionId":"nope","cwd":%q,"mcpServers":[]}`, cwd))
	add("r14", "no/such_method", `{}`)
	if len(want) != 15 {
		t.Fatalf("built %d requests", len(want))
	}
	for range 3 {
		got := replyIDs(runToEOF(t, in.String()))
		for _, id := range want {
			if !got[id] {
				t.Fatalf("request %s was read before EOF but never answered (answered: %v)", id, got)
			}
		}
	}
}

// Notification floods neither wedge nor close the connection: 200 000
// session/cancel lines, or 20 000 unknown extension notifications, then
// requests that are answered; then the daemon exits at EOF. The daemon runs
// on one P, where the SDK's reading outruns its notification goroutine most.
func TestNotificationFloodsKeepServing(t *testing.T) {
	floods := []struct {
		name string
		n    int
		line func(sid string, i int) string
	}{
		{"session/cancel", 200_000, func(sid string, _ int) string { return rawCancel(sid) }},
		{"unknown _x/ notifications", 20_000, func(_ string, i int) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","method":"_x/noise","params":{"n":%d}}`+"\n", i)
		}},
	}
	for _, f := range floods {
		t.Run(f.name, func(t *testing.T) {
			d := startDaemon(t, acptest.ZedCapabilities(), nil, "DSH_LOG_LEVEL=warn", "GOMAXPROCS=1")
			sid := d.newSession(t.TempDir())
			var b bytes.Buffer
			for i := range f.n {
				b.WriteString(f.line(sid, i))
			}
			// A wedged daemon stops reading stdin: the write and the call
			// then block for good, so they run aside and a timeout kills it.
			answered := make(chan error, 1)
			go func() {
				if err := d.WriteRaw(b.Bytes()); err != nil {
					answered <- err
					return
				}
				var list struct {
					Sessions []json.RawMessage `json:"sessions"`
				}
				answered <- d.Call(context.Background(), "session/list", map[string]any{}, &list)
			}()
			select {
			case err := <-answered:
				if err != nil {
					t.Fatalf("after %d %s: session/list: %v", f.n, f.name, err)
				}
			case <-time.After(30 * time.Second):
				_ = syscall.Kill(d.Pid(), syscall.SIGKILL)
				t.Fatalf("after %d %s: session/list not answered within 30s (daemon wedged; killed)", f.n, f.name)
			}
			if got := d.prompt(sid, "!echo still"); got != "end_turn" {
				t.Fatalf("after %d %s: prompt ended %q", f.n, f.name, got)
			}
			if err := d.CloseStdin(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := d.Wait(ctx); err != nil {
				t.Fatalf("exit at EOF after the flood: %v", err)
			}
		})
	}
}

// Invalid UTF-8 in an id, a method or a string never reaches stdout raw:
// every line the daemon writes is JSON text (valid UTF-8).
func TestInvalidUTF8NeverReachesStdout(t *testing.T) {
	d := startDaemon(t, acptest.ZedCapabilities(), nil)
	sid := d.newSession(t.TempDir())
	lines := []string{
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\xfe\",\"method\":\"session/list\",\"params\":{}}\n",
		"{\"jsonrpc\":\"2.0\",\"id\":\"ok\xc3\",\"method\":\"no/such\",\"params\":{}}\n",
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xed\xa0\x80\",\"result\":{}}\n", // a response (surrogate bytes): dropped
		"{\"jsonrpc\":\"2.0\",\"id\":7001,\"method\":\"no/such\xff\",\"params\":{}}\n",
		"{\"jsonrpc\":\"2.0\",\"id\":7002,\"method\":\"session/new\",\"params\":{\"cwd\":\"/nope\xff\",\"mcpServers\":[]}}\n",
		"{\"jsonrpc\":\"2.0\",\"id\":7003,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"" + sid + "\",\"prompt\":[{\"type\":\"text\",\"text\":\"!printf 'a\\\\377b\\\\n'; echo \xff\"}]}}\n",
	}
	if err := d.WriteRaw([]byte(strings.Join(lines, ""))); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"7001", "7002", "7003"} {
		if _, err := d.WaitResponse(ctxT(t), id); err != nil {
			t.Fatal(err)
		}
	}
	d.errorReply("null", -32600) // the bad string ids cannot be echoed
	if got := d.prompt(sid, "!echo fine"); got != "end_turn" {
		t.Fatalf("prompt after bad input ended %q", got)
	}
	for _, l := range d.Inbound() {
		if !json.Valid(l) || !utf8.Valid(l) {
			t.Errorf("not JSON text on stdout: %q", l)
		}
	}
}

// A client that closes its end of stdout while a silent command runs: the
// daemon notices without having to write, kills the command and exits.
func TestClosedStdoutIsNoticedWithoutAWrite(t *testing.T) {
	bin := acptest.BuildBinary(t)
	marker := acptest.NewMarker()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "DSH_STATE_DIR="+t.TempDir(), "DSH_API_KEY=", "DEEPSEEK_API_KEY=", "GORACE=atexit_sleep_ms=0")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = outW
	var stderr acptest.LockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM) // the daemon kills its commands on TERM
		<-exited
		if t.Failed() {
			t.Logf("stderr:\n%s", stderr.String())
		}
	})
	lines := make(chan []byte, 64)
	go func() {
		defer close(lines)
		for l := range lineReader(outR) {
			lines <- l
		}
	}()
	next := func(pred func([]byte) bool) []byte {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatal("stdout ended")
				}
				if pred(l) {
					return l
				}
			case <-timeout:
				t.Fatal("no such line within 20s")
			}
		}
	}
	has := func(s string) func([]byte) bool { return func(l []byte) bool { return bytes.Contains(l, []byte(s)) } }
	fmt.Fprint(in, initializeLine("i", acptest.ZedCapabilities()))
	next(has(`"id":"i"`))
	fmt.Fprint(in, newSessionLine("n", t.TempDir()))
	var r struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	_ = json.Unmarshal(next(has(`"id":"n"`)), &r)
	fmt.Fprint(in, rawPrompt(1, r.Result.SessionID, "!export M="+marker+"; sleep 300"))
	next(has(`"tool_call"`))
	eventually.True(t, 10*time.Second, func() bool {
		procs, err := acptest.ProcsWithMarker(marker)
		return err == nil && len(procs) > 0
	}, "the command's process never appeared")

	// Close the read end: nothing reads stdout any more. The reader
	// goroutine ends with an error on the closed file.
	start := time.Now()
	outR.Close()
	select {
	case err := <-exited:
		exited <- err // for the cleanup
		if err != nil {
			t.Fatalf("exit: %v", err)
		}
		t.Logf("exited %v after stdout closed", time.Since(start))
	case <-time.After(15 * time.Second):
		t.Fatal("the daemon lives on 15s after its stdout was closed")
	}
	if left, err := acptest.WaitNoProcsWithMarker(ctxT(t), marker); err != nil {
		t.Fatalf("survivors %+v: %v", left, err)
	}
	in.Close()
}

// lineReader yields the lines of r until it fails.
func lineReader(r io.Reader) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		var buf []byte
		chunk := make([]byte, 64<<10)
		for {
			n, err := r.Read(chunk)
			buf = append(buf, chunk[:n]...)
			for {
				i := bytes.IndexByte(buf, '\n')
				if i < 0 {
					break
				}
				if !yield(bytes.Clone(buf[:i])) {
					return
				}
				buf = buf[i+1:]
			}
			if err != nil {
				return
			}
		}
	}
}

// Prompts to one session written together run in wire order, and the reply
// to each is on the wire before the next one's first update.
func TestPipelinedPromptsKeepReplyOrder(t *testing.T) {
	const runs, lanes, depth = 60, 4, 3
	d := startDaemon(t, acptest.ZedCapabilities(), nil, "DSH_LOG_LEVEL=warn")
	sids := make([]string, lanes)
	for i := range sids {
		sids[i] = d.newSession(t.TempDir())
	}
	ctx := ctxT(t)
	errs := make(chan error, lanes)
	var wg sync.WaitGroup
	for lane, sid := range sids {
		wg.Go(func() {
			for r := lane; r < runs; r += lanes {
				var b strings.Builder
				for k := range depth {
					b.WriteString(rawPrompt(2_000_000+r*depth+k, sid, fmt.Sprintf("!echo p-%d-%d", r, k)))
				}
				if err := d.WriteRaw([]byte(b.String())); err != nil {
					errs <- err
					return
				}
				for k := range depth {
					if _, err := stopReason(ctx, d, 2_000_000+r*depth+k); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Positions on the wire of each reply and each card's first update.
	reply, open := map[string]int{}, map[string]int{}
	for i, l := range d.Inbound() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Update update `json:"update"`
			} `json:"params"`
		}
		if json.Unmarshal(l, &m) != nil {
			continue
		}
		switch {
		case m.Method == "" && m.ID != nil:
			reply[string(m.ID)] = i
		case m.Params.Update.Kind == "tool_call":
			open[m.Params.Update.Title] = i
		}
	}
	for r := range runs {
		for k := range depth {
			id := fmt.Sprint(2_000_000 + r*depth + k)
			title := fmt.Sprintf("echo p-%d-%d", r, k)
			if open[title] == 0 || reply[id] == 0 || open[title] > reply[id] {
				t.Fatalf("run %d prompt %d: card at %d, reply at %d", r, k, open[title], reply[id])
			}
			if k+1 < depth {
				nextTitle := fmt.Sprintf("echo p-%d-%d", r, k+1)
				if open[nextTitle] < reply[id] {
					t.Fatalf("run %d: prompt %d's first update (line %d) precedes prompt %d's reply (line %d)", r, k+1, open[nextTitle], k, reply[id])
				}
			}
		}
	}
}
