package replay

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

func TestDelete(t *testing.T) {
	s, state := newTestStore(t)
	j := mustCreate(t, s, "d1", "/w")
	mustAppend(t, j, event.UserPrompt{Text: "hello"})

	// A writer holds it: another daemon serving the session, or this one.
	if err := s.Delete("d1"); !errors.Is(err, ErrLocked) {
		t.Fatalf("Delete of a held session = %v, want ErrLocked", err)
	}
	if _, err := s.Load("d1"); err != nil {
		t.Fatalf("a refused Delete removed the journal: %v", err)
	}
	j.Close()

	if err := s.Delete("d1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(state, "sessions", "d1.jsonl")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("journal still on disk: %v", err)
	}
	if _, err := s.Load("d1"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load after Delete = %v, want not exist", err)
	}
	if err := s.Delete("d1"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("second Delete = %v, want not exist", err)
	}
	if err := s.Delete("../x"); err == nil {
		t.Error("Delete of an invalid id succeeded")
	}
}

func TestDeleteRefusesASymlink(t *testing.T) {
	s, state := newTestStore(t)
	outside := filepath.Join(t.TempDir(), "keep.jsonl")
	if err := os.WriteFile(outside, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(state, "sessions", "ln.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("ln"); !errors.Is(err, ErrUnsafe) {
		t.Errorf("Delete through a symlink = %v, want ErrUnsafe", err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("the symlink's target is gone: %v", err)
	}
}
