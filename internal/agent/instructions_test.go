package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/agent"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/internal/llm"
	"github.com/dsh-acp/dsh-acp/internal/llm/llmtest"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// instructionsSession is a session in cwd against srv.
func instructionsSession(t *testing.T, srv *llmtest.Server, cwd string, cfg agent.Config) (*agent.Session, *recorder) {
	t.Helper()
	rec := &recorder{}
	model := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: testKey, Model: "test-model"})
	return agent.NewSession("s", cwd, model, defaultBox(), rec, nil, cfg), rec
}

func TestProjectInstructionsReachTheSystemPrompt(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	cwd := filepath.Join(root, "svc")
	writeFile(t, filepath.Join(root, "AGENTS.md"), "Run tests with `make check`.\n")
	writeFile(t, filepath.Join(cwd, "AGENTS.md"), "In svc, never touch generated/.\n")
	srv := llmtest.New(t, llmtest.Reply("a"), llmtest.Reply("b"), llmtest.Reply("c"))
	sess, rec := instructionsSession(t, srv, cwd, agent.Config{})

	if _, err := sess.Prompt(t.Context(), "one"); err != nil {
		t.Fatal(err)
	}
	sys := srv.Last().Messages[0].Content
	rootAt, cwdAt := strings.Index(sys, "Run tests with `make check`."), strings.Index(sys, "In svc, never touch generated/.")
	if rootAt < 0 || cwdAt < rootAt || !strings.Contains(sys, "## "+filepath.Join(root, "AGENTS.md")) ||
		!strings.HasSuffix(sys, "In svc, never touch generated/.") || !strings.Contains(sys, "TOOLS: check every") {
		t.Fatalf("system prompt:\n%s", sys)
	}
	ins := only[event.Instructions](rec.events())
	if got := kinds(rec.events()); !strings.HasPrefix(got, "UserPrompt Instructions AssistantMessage") || len(ins) != 1 ||
		len(ins[0].Files) != 2 || ins[0].Files[1] != filepath.Join(cwd, "AGENTS.md") || ins[0].Cut {
		t.Fatalf("events %s, instructions %+v", got, ins)
	}

	// Unchanged: not announced again. Changed: the next turn reads it.
	rec.reset()
	if _, err := sess.Prompt(t.Context(), "two"); err != nil {
		t.Fatal(err)
	}
	if n := len(only[event.Instructions](rec.events())); n != 0 || srv.Last().Messages[0].Content != sys {
		t.Errorf("unchanged instructions: %d events, same prompt %v", n, srv.Last().Messages[0].Content == sys)
	}
	writeFile(t, filepath.Join(cwd, "AGENTS.md"), "In svc, use the vendored tools.\n")
	if _, err := sess.Prompt(t.Context(), "three"); err != nil {
		t.Fatal(err)
	}
	if sys := srv.Last().Messages[0].Content; !strings.Contains(sys, "use the vendored tools") || strings.Contains(sys, "never touch generated") {
		t.Errorf("the change was not picked up:\n%s", sys)
	}
	if n := len(only[event.Instructions](rec.events())); n != 1 {
		t.Errorf("the change was announced %d times", n)
	}
}

func TestProjectInstructionsAreCapped(t *testing.T) {
	cwd := t.TempDir()
	writeFile(t, filepath.Join(cwd, "AGENTS.md"), strings.Repeat("rule\n", 1000))
	srv := llmtest.New(t, llmtest.Reply("a"))
	sess, rec := instructionsSession(t, srv, cwd, agent.Config{InstructionsLimit: 100})
	if _, err := sess.Prompt(t.Context(), "go"); err != nil {
		t.Fatal(err)
	}
	sys := srv.Last().Messages[0].Content
	if !strings.Contains(sys, "[… AGENTS.md cut here: it has 5000 bytes, the prompt carries the first 100]") || strings.Count(sys, "rule") > 21 {
		t.Errorf("system prompt:\n%s", sys)
	}
	if ins := only[event.Instructions](rec.events()); len(ins) != 1 || !ins[0].Cut {
		t.Errorf("instructions: %+v", ins)
	}
}

func TestRestoredSessionDoesNotAnnounceInstructionsAgain(t *testing.T) {
	cwd := t.TempDir()
	writeFile(t, filepath.Join(cwd, "AGENTS.md"), "Be terse.\n")
	srv := llmtest.New(t, llmtest.Reply("a"), llmtest.Reply("b"))
	sess, rec := instructionsSession(t, srv, cwd, agent.Config{})
	if _, err := sess.Prompt(t.Context(), "one"); err != nil {
		t.Fatal(err)
	}
	again, rec2 := instructionsSession(t, srv, cwd, agent.Config{})
	again.Restore(roundTrip(t, rec.events()))
	if _, err := again.Prompt(t.Context(), "two"); err != nil {
		t.Fatal(err)
	}
	if n := len(only[event.Instructions](rec2.events())); n != 0 {
		t.Errorf("announced again after a restore: %d", n)
	}
	if !strings.Contains(srv.Last().Messages[0].Content, "Be terse.") {
		t.Error("the restored session lost the instructions")
	}
}
