package mcp

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
	"github.com/dsh-acp/dsh-acp/internal/eventually"
)

func TestMain(m *testing.M) {
	code := m.Run()
	acptest.RemoveBuilds()
	os.Exit(code)
}

// serverBin is the test MCP server's binary, built once.
func serverBin(t testing.TB) string {
	t.Helper()
	return acptest.BuildPackage(t, "./internal/mcp/testdata/mcpserver")
}

// fixture is one session's servers with the test server as "test".
type fixture struct {
	t      *testing.T
	s      *Servers
	cwd    string
	record string
	marker string
}

func startFixture(t *testing.T, cfg Config, extra ...Spec) *fixture {
	t.Helper()
	f := &fixture{t: t, cwd: t.TempDir(), marker: acptest.NewMarker()}
	f.record = filepath.Join(t.TempDir(), "record")
	spec := Spec{Name: "test", Transport: TransportStdio, Command: serverBin(t),
		Env: []string{"MCPTEST_RECORD=" + f.record, "MCPTEST_DIR=" + f.cwd, "MARKER=" + f.marker}}
	f.s = Start(cfg, "sess-1", f.cwd, append([]Spec{spec}, extra...))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		f.s.Close(ctx)
	})
	if !f.s.Ready(ctxT(t)) {
		t.Fatal("servers not ready")
	}
	return f
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// tool finds a tool by its offered name.
func (f *fixture) tool(name string) *tool {
	f.t.Helper()
	for _, t := range f.s.Tools() {
		if t.Name() == name {
			return t.(*tool)
		}
	}
	f.t.Fatalf("no tool %s among %v", name, names(f.s.Tools()))
	return nil
}

// recorded is the record file's lines.
func (f *fixture) recorded() []string {
	b, _ := os.ReadFile(f.record)
	return strings.Fields(strings.ReplaceAll(string(b), " ", "_"))
}

// waitRecorded waits until the record holds line.
func (f *fixture) waitRecorded(line string) {
	f.t.Helper()
	want := strings.ReplaceAll(line, " ", "_")
	eventually.True(f.t, 10*time.Second, func() bool { return slices.Contains(f.recorded(), want) },
		"the server never recorded %q", line)
}
