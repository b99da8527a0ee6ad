package acp_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/dsh-acp/dsh-acp/acp"
	"github.com/dsh-acp/dsh-acp/executor/local"
	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/replay"
	"github.com/dsh-acp/dsh-acp/tools"
)

// countingTool counts the card intents asked of a tool.
type countingTool struct {
	tools.Tool
	calls, results atomic.Int64
}

func (c *countingTool) PresentCall(args json.RawMessage) tools.CallIntent {
	c.calls.Add(1)
	return c.Tool.PresentCall(args)
}

func (c *countingTool) PresentResult(args json.RawMessage, res event.Result) tools.ResultIntent {
	c.results.Add(1)
	return c.Tool.PresentResult(args, res)
}

// Replaying a session decodes each call's arguments once: its card is
// opened once (bash's PresentCall decodes them) and closed once (bash's
// PresentResult does not read them: TestBashResultIgnoresArguments), and
// nothing else on the way asks.
func TestReplayDecodesEachCallsArgumentsOnce(t *testing.T) {
	const calls = 300
	state := t.TempDir()
	store, err := replay.OpenStore(state)
	if err != nil {
		t.Fatal(err)
	}
	id := replay.NewSessionID()
	path, _ := store.Path(id)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	if err := replay.GenerateJournal(w, calls, id, state); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ex, err := local.New(local.Config{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	bash, _ := tools.NewBash(ex, tools.Config{}).Lookup(tools.BashName)
	counted := &countingTool{Tool: bash}
	reg := tools.NewRegistry()
	if err := reg.Register(counted); err != nil {
		t.Fatal(err)
	}
	if _, _, err := loadOnce(acp.Config{Executor: ex, Tools: reg, Store: store}, id, filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	if got := counted.calls.Load(); got != calls {
		t.Errorf("%d calls' cards opened %d times, want once each", calls, got)
	}
	if got := counted.results.Load(); got != calls {
		t.Errorf("%d calls' cards closed %d times, want once each", calls, got)
	}
}
