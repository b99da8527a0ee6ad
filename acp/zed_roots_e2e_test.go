package acp_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

// additionalDirectories over the real binary and real bubblewrap: at the
// workspace level a second project directory is writable as the cwd is
// (with its .git protected as the cwd's is), a sibling is not, the model's
// system prompt names it, and a reload without the field restores it from
// the journal. Judged on the host's disk.
func TestZedAdditionalDirectoryWritableAndNamed(t *testing.T) {
	needSandbox(t)
	tree := newSandboxTree(t)
	second := filepath.Join(tree.root, "second")
	if err := os.MkdirAll(second, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "init", "-q", second).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	srv := llmtest.New(t)
	srv.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Reply("ok") })
	d := startWithModel(t, optedIn(), srv)

	var r struct {
		SessionID string `json:"sessionId"`
	}
	params := map[string]any{"cwd": tree.cwd, "mcpServers": []any{}, "additionalDirectories": []string{second}}
	if err := d.Call(ctxT(t), "session/new", params, &r); err != nil {
		t.Fatalf("session/new: %v", err)
	}
	sid := r.SessionID
	d.setSandbox(sid, executor.LevelWorkspace)

	hook := filepath.Join(second, ".git", "hooks", "pre-commit")
	write := func(name string) {
		t.Helper()
		in, out := filepath.Join(second, name), filepath.Join(tree.sibling, name)
		d.direct(sid, "echo in > "+in+"; echo out > "+out+"; echo planted > "+hook)
		if b, err := os.ReadFile(in); err != nil || string(b) != "in\n" {
			t.Errorf("the write into the additional directory did not land: %q, %v", b, err)
		}
		if _, err := os.Lstat(out); !os.IsNotExist(err) {
			t.Errorf("a write outside the session's directories landed: %s (%v)", out, err)
		}
		if _, err := os.Lstat(hook); !os.IsNotExist(err) {
			t.Errorf("a git hook was planted in the additional directory: %v", err)
		}
	}
	write("a.txt")

	systemOf := func() string {
		t.Helper()
		reqs := srv.Requests()
		if len(reqs) == 0 || len(reqs[len(reqs)-1].Messages) == 0 {
			t.Fatal("the model was never asked")
		}
		return reqs[len(reqs)-1].Messages[0].Content
	}
	d.prompt(sid, "hello")
	if sys := systemOf(); !strings.Contains(sys, "The project also has these directories") || !strings.Contains(sys, second) {
		t.Errorf("the system prompt does not name %s:\n%s", second, sys)
	}

	// Reloaded without the field: restored from the journal.
	if err := d.Call(ctxT(t), "session/close", map[string]any{"sessionId": sid}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Call(ctxT(t), "session/load", map[string]any{"sessionId": sid, "cwd": tree.cwd, "mcpServers": []any{}}, nil); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	write("b.txt")
	d.prompt(sid, "again")
	if sys := systemOf(); !strings.Contains(sys, second) {
		t.Errorf("after session/load the system prompt does not name %s", second)
	}

	// A relative or missing directory is refused like a bad cwd.
	for _, bad := range []string{"relative/dir", filepath.Join(tree.root, "missing")} {
		p := map[string]any{"cwd": tree.cwd, "mcpServers": []any{}, "additionalDirectories": []string{bad}}
		if err := d.Call(ctxT(t), "session/new", p, nil); rpcCode(err) != -32602 {
			t.Errorf("additionalDirectories %q: %v, want -32602", bad, err)
		}
	}
}
