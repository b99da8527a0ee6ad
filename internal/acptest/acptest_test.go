package acptest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeAgentEnv); mode != "" {
		runFakeAgent(mode)
		os.Exit(0)
	}
	code := m.Run()
	_ = RemoveBuilds()
	os.Exit(code)
}

// startFake spawns this test binary as the fake agent.
func startFake(t testing.TB, mode string) *Agent {
	t.Helper()
	return Start(t, os.Args[0], nil, []string{fakeAgentEnv + "=" + mode})
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// chunkText extracts the text of an agent_message_chunk update.
func chunkText(u json.RawMessage) string {
	var v struct {
		Content struct{ Text string } `json:"content"`
	}
	_ = json.Unmarshal(u, &v)
	return v.Content.Text
}

func hasText(text string) func(json.RawMessage) bool {
	return func(u json.RawMessage) bool { return chunkText(u) == text }
}

func TestRoundTrip(t *testing.T) {
	ctx := testContext(t)
	a := startFake(t, "1")

	var init struct {
		ProtocolVersion int            `json:"protocolVersion"`
		Echo            map[string]any `json:"echo"`
	}
	if err := a.Call(ctx, "initialize", InitializeParams(ZedCapabilities()), &init); err != nil {
		t.Fatal(err)
	}
	meta, _ := init.Echo["_meta"].(map[string]any)
	if init.ProtocolVersion != 1 || meta["terminal_output"] != true || init.Echo["terminal"] != true {
		t.Errorf("initialize result %+v", init)
	}
	var sess struct{ SessionID string }
	if err := a.Call(ctx, "session/new", map[string]any{"cwd": "/", "mcpServers": []any{}}, &sess); err != nil {
		t.Fatal(err)
	}
	var res struct{ StopReason string }
	prompt := map[string]any{"sessionId": sess.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "hi"}}}
	if err := a.Call(ctx, "session/prompt", prompt, &res); err != nil {
		t.Fatal(err)
	}
	if res.StopReason != "end_turn" {
		t.Errorf("stopReason %q", res.StopReason)
	}
	// Every update before the reply is recorded by the time Call returns.
	var texts []string
	for _, u := range a.Updates("s1") {
		if UpdateKind(u) != "agent_message_chunk" {
			t.Errorf("update kind %q", UpdateKind(u))
		}
		texts = append(texts, chunkText(u))
	}
	want := []string{"one", "two", "waiting", `outcome {"outcome":{"optionId":"allow","outcome":"selected"}}`}
	if !slices.Equal(texts, want) {
		t.Errorf("updates %q, want %q", texts, want)
	}
	if len(a.Updates("other")) != 0 || len(a.Updates("")) != len(want) {
		t.Errorf("Updates filters by session wrongly")
	}
	if _, err := a.WaitInbound(ctx, func(m json.RawMessage) bool {
		return strings.Contains(string(m), `"method":"session/request_permission"`)
	}); err != nil {
		t.Errorf("permission request not recorded: %v", err)
	}
}

func TestErrorResponseKeepsCode(t *testing.T) {
	ctx := testContext(t)
	a := startFake(t, "1")
	err := a.Call(ctx, "no/such", map[string]any{}, nil)
	var rpcErr *jsonrpc2.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc2.CodeMethodNotFound {
		t.Errorf("Call = %v, want a -32601 *jsonrpc2.Error", err)
	}
}

func TestBlockingResponderDoesNotStallNotifications(t *testing.T) {
	ctx := testContext(t)
	a := startFake(t, "1")
	release := make(chan struct{})
	a.SetResponder(func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		<-release
		return PermissionResponder("reject_once")(ctx, method, params)
	})
	done := make(chan error, 1)
	go func() { done <- a.Call(ctx, "session/prompt", map[string]any{"sessionId": "s1"}, nil) }()
	// The agent sends "waiting" after its permission request: it arrives
	// while the responder still holds the request.
	if _, err := a.WaitUpdate(ctx, "s1", hasText("waiting")); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := a.WaitUpdate(ctx, "s1", hasText(`outcome {"outcome":{"optionId":"reject","outcome":"selected"}}`)); err != nil {
		t.Errorf("outcome: %v; updates %s", err, a.Updates("s1"))
	}
}

func TestWriteRawGetsNullIDErrorAndClientGoesOn(t *testing.T) {
	ctx := testContext(t)
	a := startFake(t, "1")
	if err := a.WriteRaw([]byte("{not json\n")); err != nil {
		t.Fatal(err)
	}
	reply, err := a.WaitInbound(ctx, func(m json.RawMessage) bool { return strings.Contains(string(m), `"id":null`) })
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Error struct{ Code int }
	}
	if json.Unmarshal(reply, &r) != nil || r.Error.Code != -32700 {
		t.Errorf("reply %s", reply)
	}
	if err := a.Call(ctx, "session/new", map[string]any{}, nil); err != nil {
		t.Errorf("call after a raw line: %v", err)
	}
}

func TestConcurrentCallsAndRawWritesDoNotInterleave(t *testing.T) {
	ctx := testContext(t)
	a := startFake(t, "1")
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if i%2 == 0 {
				if err := a.WriteRaw([]byte("{broken " + strings.Repeat("x", 5000) + "\n")); err != nil {
					t.Error(err)
				}
				return
			}
			if err := a.Call(ctx, "session/new", map[string]any{"pad": strings.Repeat("y", 5000)}, nil); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// The fake agent answers in order: once this call returns, every broken
	// line has had its parse error. Each gets exactly one; an interleaved
	// write would have produced more errors and lost calls.
	if err := a.Call(ctx, "session/new", map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
	if n := countNullIDReplies(a.Inbound()); n != 10 {
		t.Errorf("%d parse errors, want 10", n)
	}
}

func countNullIDReplies(msgs []json.RawMessage) int {
	n := 0
	for _, m := range msgs {
		if strings.Contains(string(m), `"id":null`) {
			n++
		}
	}
	return n
}

// fakeTB records what Start's cleanup reports, so tests can check failures
// the cleanup is meant to raise.
type fakeTB struct {
	testing.TB
	mu       sync.Mutex
	errs     []string
	cleanups []func()
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Logf(string, ...any) {}
func (f *fakeTB) Failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.errs) > 0
}
func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) runCleanups() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

func TestCleanupKillsAndReportsHungAgent(t *testing.T) {
	ftb := &fakeTB{TB: t}
	a := startFake(ftb, "hang")
	a.SetExitTimeout(200 * time.Millisecond)
	ftb.runCleanups()
	select {
	case <-a.Exited():
	default:
		t.Fatal("agent still running after cleanup")
	}
	if len(ftb.errs) != 1 || !strings.Contains(ftb.errs[0], "still running") {
		t.Errorf("cleanup reported %q", ftb.errs)
	}
}

func TestCleanupReportsProtocolViolation(t *testing.T) {
	ctx := testContext(t)
	ftb := &fakeTB{TB: t}
	a := startFake(ftb, "1")
	if err := a.Call(ctx, "garbage", nil, nil); err != nil {
		t.Fatalf("the client broke on a non-JSON line: %v", err)
	}
	ftb.runCleanups()
	if err := a.Wait(ctx); err != nil {
		t.Errorf("agent exit: %v", err)
	}
	if len(ftb.errs) != 1 || !strings.Contains(ftb.errs[0], "debug: not a protocol line") {
		t.Errorf("cleanup reported %q", ftb.errs)
	}
}

func TestWaitFailsWhenStdoutCloses(t *testing.T) {
	ctx := testContext(t)
	a := startFake(t, "1")
	if err := a.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	if err := a.Wait(ctx); err != nil {
		t.Fatalf("agent exit: %v", err)
	}
	if _, err := a.WaitUpdate(ctx, "", func(json.RawMessage) bool { return true }); err == nil || ctx.Err() != nil {
		t.Errorf("WaitUpdate = %v, want an error about stdout", err)
	}
}

func TestProcHelpers(t *testing.T) {
	ctx := testContext(t)
	marker := NewMarker()
	// sh starts a child, and a grandchild re-parented away by a subshell.
	cmd := exec.Command("sh", "-c", "sleep 300 & echo $!; (sleep 301 & echo $!); echo ready; wait")
	cmd.Env = append(os.Environ(), "ACPTEST_MARKER="+marker)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		}
	})
	sc := bufio.NewScanner(out)
	var lines []string
	for len(lines) < 3 && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) != 3 || lines[2] != "ready" {
		t.Fatalf("sh printed %q", lines)
	}
	child, _ := strconv.Atoi(lines[0])
	orphan, _ := strconv.Atoi(lines[1])

	pids := func(ps []Proc) []int {
		var out []int
		for _, p := range ps {
			out = append(out, p.PID)
		}
		return out
	}
	marked, err := ProcsWithMarker(marker)
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{cmd.Process.Pid, child, orphan} {
		if !slices.Contains(pids(marked), pid) {
			t.Errorf("ProcsWithMarker misses pid %d: %v", pid, marked)
		}
	}
	desc, err := Descendants(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if got := pids(desc); !slices.Contains(got, child) || slices.Contains(got, orphan) {
		t.Errorf("Descendants = %v, want %d and not the re-parented %d", got, child, orphan)
	}
	for _, p := range marked {
		if p.PID == child && (p.PGID != cmd.Process.Pid || !strings.Contains(p.Cmdline, "sleep 300")) {
			t.Errorf("child proc %v", p)
		}
	}

	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	killed = true
	if left, err := WaitNoProcsWithMarker(ctx, marker); err != nil {
		t.Errorf("%v: %v", err, left)
	}
}

func TestParseStat(t *testing.T) {
	tests := []struct {
		stat string
		want Proc
		ok   bool
	}{
		{"42 (sleep) S 1 42 40 0 -1", Proc{PID: 42, State: 'S', PPID: 1, PGID: 42, SID: 40}, true},
		{"7 (a b) (c)) Z 3 4 5 0", Proc{PID: 7, State: 'Z', PPID: 3, PGID: 4, SID: 5}, true},
		{"7 sleep S 1 2 3", Proc{}, false},
		{"x (a) S 1 2 3", Proc{}, false},
		{"7 (a) S 1", Proc{}, false},
	}
	for _, tt := range tests {
		got, err := parseStat([]byte(tt.stat))
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseStat(%q) = %+v, %v", tt.stat, got, err)
		}
	}
}

func TestModuleRootAndBuildPackage(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "acptest", "build.go")); err != nil {
		t.Errorf("ModuleRoot = %s: %v", root, err)
	}
	bin := BuildPackage(t, "./internal/acptest/testdata/hello")
	if again := BuildPackage(t, "./internal/acptest/testdata/hello"); again != bin {
		t.Errorf("second build at %s, first at %s", again, bin)
	}
	if err := exec.Command(bin).Run(); err != nil {
		t.Errorf("run built binary: %v", err)
	}
}

// PairedMedians alternates which of the pair runs first and reports each
// one's median and the median ratio.
func TestPairedMedians(t *testing.T) {
	var order []string
	subject := func() (time.Duration, error) { order = append(order, "s"); return 3 * time.Millisecond, nil }
	baseline := func() (time.Duration, error) { order = append(order, "b"); return time.Millisecond, nil }
	s, b, ratio, err := PairedMedians(4, subject, baseline)
	if err != nil || s != 3*time.Millisecond || b != time.Millisecond || ratio != 3 {
		t.Errorf("got %v %v %v %v, want 3ms 1ms 3", s, b, ratio, err)
	}
	if got := strings.Join(order, ""); got != "bssbbssb" {
		t.Errorf("run order %s, want bssbbssb", got)
	}
	fail := errors.New("boom")
	if _, _, _, err := PairedMedians(4, subject, func() (time.Duration, error) { return 0, fail }); !errors.Is(err, fail) {
		t.Errorf("error %v, want %v", err, fail)
	}
}

// RotatedMedians rotates which side runs first each round and reports each
// side's median in the order given.
func TestRotatedMedians(t *testing.T) {
	var order []string
	side := func(name string) func() error {
		return func() error { order = append(order, name); return nil }
	}
	m, err := RotatedMedians(3, side("a"), side("b"), side("c"))
	if err != nil || len(m) != 3 {
		t.Fatalf("got %v %v, want three medians", m, err)
	}
	if got := strings.Join(order, ""); got != "abcbcacab" {
		t.Errorf("run order %s, want abcbcacab", got)
	}
	fail := errors.New("boom")
	if _, err := RotatedMedians(2, side("a"), func() error { return fail }); !errors.Is(err, fail) {
		t.Errorf("error %v, want %v", err, fail)
	}
}
