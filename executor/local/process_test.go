package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
)

// helperEnv selects a helper role when the test binary re-executes itself.
const helperEnv = "DSH_LOCAL_TEST_HELPER"

func TestMain(m *testing.M) {
	name := os.Getenv(helperEnv)
	if name == "" {
		os.Exit(m.Run())
	}
	if helper, ok := helpers()[name]; ok {
		helper() // exits
	}
	fmt.Fprintln(os.Stderr, "unknown helper")
	os.Exit(2)
}

// helperRun runs command through a fresh Executor and returns its stdout.
func helperRun(command string) string {
	state, err := os.MkdirTemp("", "dsh-helper-*")
	if err != nil {
		helperFail(err)
	}
	defer os.RemoveAll(state)
	e, err := New(Config{StateDir: state})
	if err != nil {
		helperFail(err)
	}
	defer e.Shutdown(context.Background())
	res, err := e.Run(context.Background(), executor.Spec{Command: command, Workdir: "/", Timeout: 20 * time.Second}, nil)
	if err != nil {
		helperFail(err)
	}
	return strings.TrimSpace(string(res.Stdout))
}

func helperFail(err error) {
	fmt.Fprintln(os.Stderr, "helper:", err)
	os.Exit(1)
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

func TestResolve(t *testing.T) {
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	e := newTestExecutor(t, Config{DefaultTimeout: 5 * time.Second, MaxTimeout: 10 * time.Second})
	withDefault := newTestExecutor(t, Config{DefaultWorkdir: "/srv"})
	tests := []struct {
		name    string
		e       *Executor
		req     executor.Request
		dir     string
		timeout time.Duration
	}{
		{name: "session cwd", e: e, req: executor.Request{SessionCwd: "/work/s"}, dir: "/work/s", timeout: 5 * time.Second},
		{name: "relative to session", e: e, req: executor.Request{Workdir: "sub/../x", SessionCwd: "/work/s"}, dir: "/work/s/x", timeout: 5 * time.Second},
		{name: "absolute wins", e: e, req: executor.Request{Workdir: "/abs/", SessionCwd: "/work/s"}, dir: "/abs", timeout: 5 * time.Second},
		{name: "config default", e: withDefault, req: executor.Request{}, dir: "/srv", timeout: DefaultTimeout},
		{name: "relative to config default", e: withDefault, req: executor.Request{Workdir: "a"}, dir: "/srv/a", timeout: DefaultTimeout},
		{name: "process cwd", e: e, req: executor.Request{Timeout: time.Second}, dir: cwd, timeout: time.Second},
		{name: "clamped", e: e, req: executor.Request{SessionCwd: "/", Timeout: time.Hour}, dir: "/", timeout: 10 * time.Second},
		{name: "default cap", e: withDefault, req: executor.Request{Timeout: time.Hour}, dir: "/srv", timeout: DefaultMaxTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Command, tc.req.Owner = "cmd", "own"
			spec, err := tc.e.Resolve(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if spec.Workdir != tc.dir || spec.Timeout != tc.timeout || spec.Command != "cmd" || spec.Owner != "own" {
				t.Errorf("got %+v; want dir %q timeout %v", spec, tc.dir, tc.timeout)
			}
		})
	}
	if _, err := e.Resolve(executor.Request{Timeout: -time.Millisecond}); err == nil {
		t.Error("negative timeout: no error")
	}
	req := executor.Request{SessionCwd: "/", Stdin: []byte("in"), Env: map[string]string{"A": "1"}}
	spec, _ := e.Resolve(req)
	req.Stdin[0], req.Env["A"] = 'X', "2"
	if string(spec.Stdin) != "in" || spec.Env["A"] != "1" {
		t.Errorf("Resolve kept references to the request: %+v", spec)
	}
}
