package acp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
)

// session/delete over the real binary: the session (open in this daemon,
// with a spill file on disk) is closed and removed — journal and spill
// directory gone from disk, no longer listed, -32002 on load and on a
// second delete — while a session another daemon holds is refused and
// left whole.

func listed(t *testing.T, d *daemon, sid string) bool {
	t.Helper()
	var r struct {
		Sessions []struct {
			SessionID string `json:"sessionId"`
		} `json:"sessions"`
	}
	if err := d.Call(ctxT(t), "session/list", map[string]any{}, &r); err != nil {
		t.Fatalf("session/list: %v", err)
	}
	for _, s := range r.Sessions {
		if s.SessionID == sid {
			return true
		}
	}
	return false
}

func TestZedSessionDeleteRemovesJournalAndSpill(t *testing.T) {
	d := startDaemon(t, acptest.ZedCapabilities(), nil)
	cwd := t.TempDir()
	sid := d.newSession(cwd)
	// ~110 KB of output: past the 32 KiB spill threshold, so a spill file
	// is written under <state>/spill/o-<sid>.
	if got := d.prompt(sid, "!seq 1 20000"); got != "end_turn" {
		t.Fatalf("!seq: stopReason %q", got)
	}
	journal := filepath.Join(d.stateDir, "sessions", sid+".jsonl")
	spill := filepath.Join(d.stateDir, "spill", "o-"+sid)
	for _, p := range []string{journal, spill} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("before delete, %s: %v", p, err)
		}
	}
	if !listed(t, d, sid) {
		t.Fatal("the session is not listed before delete")
	}
	if err := d.Call(ctxT(t), "session/delete", map[string]any{"sessionId": sid}, nil); err != nil {
		t.Fatalf("session/delete: %v", err)
	}
	for _, p := range []string{journal, spill} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("after delete, %s still there (%v)", p, err)
		}
	}
	if listed(t, d, sid) {
		t.Error("the deleted session is still listed")
	}
	err := d.Call(ctxT(t), "session/load", map[string]any{"sessionId": sid, "cwd": cwd, "mcpServers": []any{}}, nil)
	if err == nil {
		t.Error("session/load of a deleted session succeeded")
	}
	err = d.Call(ctxT(t), "session/delete", map[string]any{"sessionId": sid}, nil)
	if code := rpcCode(err); code != -32002 {
		t.Errorf("a second session/delete: code %d (%v), want -32002", code, err)
	}
	// A prompt on the deleted session is refused: it was closed.
	if err := d.Call(ctxT(t), "session/prompt", promptParams(sid, "!echo x"), nil); err == nil {
		t.Error("a prompt on the deleted session was run")
	}
}

func TestZedSessionDeleteRefusesAnotherDaemonsSession(t *testing.T) {
	state := t.TempDir()
	a := startDaemonIn(t, state, acptest.ZedCapabilities(), nil)
	sid := a.newSession(t.TempDir())
	b := startDaemonIn(t, state, acptest.ZedCapabilities(), nil)
	err := b.Call(ctxT(t), "session/delete", map[string]any{"sessionId": sid}, nil)
	if err == nil {
		t.Fatal("session/delete of a session another daemon serves succeeded")
	}
	if code := rpcCode(err); code == -32002 || !strings.Contains(err.Error(), "another dsh-acp") {
		t.Errorf("refusal: code %d, %v; want a plain error naming the other daemon", code, err)
	}
	if _, err := os.Stat(filepath.Join(state, "sessions", sid+".jsonl")); err != nil {
		t.Errorf("the refused delete removed the journal: %v", err)
	}
	if got := a.prompt(sid, "!echo still here"); got != "end_turn" {
		t.Errorf("the serving daemon's session broke after the refused delete: %q", got)
	}
}
