package mcp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/eventually"
	"github.com/dsh-acp/dsh-acp/tools"
)

func names(ts []tools.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name())
	}
	return out
}

func TestServersOfferTheToolsWithSchemas(t *testing.T) {
	f := startFixture(t, Config{})
	got := strings.Join(names(f.s.Tools()), " ")
	want := "mcp__test__big mcp__test__echo mcp__test__fail mcp__test__grow mcp__test__picture mcp__test__slow mcp__test__write_note"
	if got != want {
		t.Fatalf("tools %s, want %s", got, want)
	}
	echo := f.tool("mcp__test__echo")
	var schema struct {
		Type       string         `json:"type"`
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	}
	if err := json.Unmarshal(echo.Schema(), &schema); err != nil || schema.Type != "object" || schema.Properties["text"] == nil {
		t.Errorf("echo schema %s (%v)", echo.Schema(), err)
	}
	if echo.Description() != "Echo the text back." || !echo.Info().ReadOnly || f.tool("mcp__test__write_note").Info().ReadOnly {
		t.Errorf("description or annotations lost: %q %+v", echo.Description(), echo.Info())
	}
	need, err := echo.Needs(nil)
	if err != nil || need != (tools.Need{Kind: tools.NeedTool, Subject: "test: echo", Server: "test", Tool: "echo", ReadOnly: true}) {
		t.Errorf("Needs = %+v, %v", need, err)
	}
	if len(f.s.Failures()) != 0 {
		t.Errorf("failures %+v", f.s.Failures())
	}
}

func TestRunResults(t *testing.T) {
	f := startFixture(t, Config{})
	for _, tc := range []struct {
		tool, args, want string
		isError          bool
	}{
		{"mcp__test__echo", `{"text":"hi"}`, "echo: hi", false},
		{"mcp__test__picture", `{}`, "a red dot\n[image: image/png, 9 bytes]", false},
		{"mcp__test__fail", `{}`, "it broke\n[the tool reported an error]", true},
		{"mcp__test__echo", `{"text":7}`, "", true}, // the server rejects the arguments
		{"mcp__test__echo", `[1]`, "the arguments must be a JSON object", true},
	} {
		res := f.tool(tc.tool).Run(ctxT(t), tools.Call{ID: "c", Args: json.RawMessage(tc.args)})
		if tc.want != "" && res.Text != tc.want || res.IsError != tc.isError {
			t.Errorf("%s %s: %+v, want %q (isError %v)", tc.tool, tc.args, res, tc.want, tc.isError)
		}
	}
	res := f.tool("mcp__test__write_note").Run(ctxT(t), tools.Call{Args: json.RawMessage(`{"name":"n.txt","text":"abc"}`)})
	if b, err := os.ReadFile(filepath.Join(f.cwd, "n.txt")); err != nil || string(b) != "abc" || res.IsError {
		t.Errorf("write_note: %+v; file %q %v", res, b, err)
	}
}

// fakeSpill records what it is asked to keep.
type fakeSpill struct {
	owner, base string
	data        []byte
}

func (s *fakeSpill) SpillText(owner, base string, data []byte) (string, error) {
	s.owner, s.base, s.data = owner, base, data
	return "/spill/" + base + ".log", nil
}

func TestRunCapsAndSpills(t *testing.T) {
	sp := &fakeSpill{}
	f := startFixture(t, Config{OutputLimit: 1000, Spill: sp})
	res := f.tool("mcp__test__big").Run(ctxT(t), tools.Call{Args: json.RawMessage(`{"n":5000}`)})
	p := PayloadOf(res)
	if !p.Truncated || p.SpillPath != "/spill/mcp-test-1.log" || len([]rune(res.Text)) > 1000 {
		t.Fatalf("payload %+v, %d runes", p, len([]rune(res.Text)))
	}
	if !strings.HasPrefix(res.Text, "line 0\nline 1\n") || !strings.HasSuffix(res.Text, "[output truncated; full output: /spill/mcp-test-1.log]") {
		t.Errorf("text does not keep the head and name the file: …%s", res.Text[len(res.Text)-120:])
	}
	if sp.owner != "sess-1" || len(sp.data) != 5000 {
		t.Errorf("spilled %d bytes for %q", len(sp.data), sp.owner)
	}
	small := f.tool("mcp__test__big").Run(ctxT(t), tools.Call{Args: json.RawMessage(`{"n":10}`)})
	if PayloadOf(small).Truncated || len(small.Text) != 10 {
		t.Errorf("a short result was changed: %+v", small)
	}
}

// TestCancelReachesTheServer: a cancelled call sends
// notifications/cancelled, which the server sees, and returns at once.
func TestCancelReachesTheServer(t *testing.T) {
	f := startFixture(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan string, 1)
	go func() {
		res := f.tool("mcp__test__slow").Run(ctx, tools.Call{Args: json.RawMessage(`{"ms":60000}`)})
		done <- PayloadOf(res).Failure
	}()
	f.waitRecorded("call slow")
	cancel()
	select {
	case failure := <-done:
		if failure != FailCancelled {
			t.Errorf("failure %q", failure)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled call did not return")
	}
	f.waitRecorded("cancelled slow")
	if res := f.tool("mcp__test__echo").Run(ctxT(t), tools.Call{Args: json.RawMessage(`{"text":"again"}`)}); res.Text != "echo: again" {
		t.Errorf("after a cancel: %+v", res)
	}
}

func TestCallTimeout(t *testing.T) {
	f := startFixture(t, Config{CallTimeout: 100 * time.Millisecond})
	res := f.tool("mcp__test__slow").Run(ctxT(t), tools.Call{Args: json.RawMessage(`{"ms":60000}`)})
	if PayloadOf(res).Failure != FailTimeout || !res.IsError || !strings.Contains(res.Text, "did not answer within 100ms") {
		t.Errorf("%+v", res)
	}
	f.waitRecorded("cancelled slow")
}

// TestCloseLeavesNoProcess: Close kills the server's whole group, the
// server and anything it started.
func TestCloseLeavesNoProcess(t *testing.T) {
	f := startFixture(t, Config{Grace: 200 * time.Millisecond})
	if procs, _ := acptest.ProcsWithMarker(f.marker); len(procs) == 0 {
		t.Fatal("the server process is not found by its marker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f.s.Close(ctx)
	if left, err := acptest.WaitNoProcsWithMarker(ctx, f.marker); err != nil {
		t.Fatalf("processes left after Close: %v %v", left, err)
	}
	res := f.tool("mcp__test__echo").Run(ctxT(t), tools.Call{Args: json.RawMessage(`{"text":"x"}`)})
	if PayloadOf(res).Failure != FailDisconnected {
		t.Errorf("a call after Close: %+v", res)
	}
}

func TestFailuresAreReportedAndOthersWork(t *testing.T) {
	f := startFixture(t, Config{ConnectTimeout: 5 * time.Second},
		Spec{Name: "missing", Transport: TransportStdio, Command: "/nonexistent/mcp-server"},
		Spec{Name: "nopath", Transport: TransportStdio, Command: "no-such-mcp-server-anywhere"},
		Spec{Name: "exits", Transport: TransportStdio, Command: "sh", Args: []string{"-c", "echo boom: bad config >&2; exit 3"}},
		Spec{Name: "test", Transport: TransportStdio, Command: "true"},
		Spec{Name: "sse", Transport: "sse", URL: "http://127.0.0.1:1/sse"},
		Spec{Name: "badurl", Transport: TransportHTTP, URL: "ftp://x"},
	)
	got := map[string]string{}
	for _, fl := range f.s.Failures() {
		got[fl.Server] = fl.Reason
	}
	for server, want := range map[string]string{
		"missing": `cannot start "/nonexistent/mcp-server": no such file or directory`,
		"nopath":  `cannot start "no-such-mcp-server-anywhere": executable file not found in $PATH`,
		"exits":   "cannot initialize the server: the server exited (exit status 3): boom: bad config",
		"test":    "another server of this session has the same name",
		"sse":     `the "sse" transport is not supported`,
		"badurl":  `"ftp://x" is not an http(s) URL`,
	} {
		if got[server] != want {
			t.Errorf("%s: reason %q, want %q", server, got[server], want)
		}
	}
	if len(got) != 6 {
		t.Errorf("failures %v", got)
	}
	if res := f.tool("mcp__test__echo").Run(ctxT(t), tools.Call{Args: json.RawMessage(`{"text":"ok"}`)}); res.Text != "echo: ok" {
		t.Errorf("the working server: %+v", res)
	}
}

func TestRefreshPicksUpAChangedToolList(t *testing.T) {
	f := startFixture(t, Config{})
	if f.s.Refresh(ctxT(t)) {
		t.Error("Refresh reported a change nobody announced")
	}
	f.tool("mcp__test__grow").Run(ctxT(t), tools.Call{Args: json.RawMessage(`{}`)})
	// The server announces the change on its own time (its SDK waits 10 ms).
	eventually.True(t, 10*time.Second, func() bool { return f.s.Refresh(ctxT(t)) }, "the changed tool list never arrived")
	if res := f.tool("mcp__test__grown").Run(ctxT(t), tools.Call{Args: json.RawMessage(`{}`)}); res.Text != "grown" {
		t.Errorf("the new tool: %+v", res)
	}
}
