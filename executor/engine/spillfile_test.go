package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSpillText(t *testing.T) {
	state := t.TempDir()
	e := newTestExecutor(t, Config{StateDir: state, SpillCap: 1 << 10})
	path, err := e.SpillText("sess-1", "mcp-my/../server", []byte("the whole text"))
	if err != nil {
		t.Fatal(err)
	}
	if dir := filepath.Join(state, "spill", "o-sess-1"); filepath.Dir(path) != dir {
		t.Errorf("spilled to %s, want a file in %s", path, dir)
	}
	if strings.Contains(filepath.Base(path), "/") || !strings.HasPrefix(filepath.Base(path), "mcp-my_.._server-") {
		t.Errorf("unsafe or unexpected name %s", filepath.Base(path))
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "the whole text" {
		t.Fatalf("read %q, %v", got, err)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	if _, err := e.SpillText("sess-1", "big", make([]byte, 2<<10)); !errors.Is(err, ErrSpillTooLarge) {
		t.Errorf("over the cap: %v, want ErrSpillTooLarge", err)
	}
	for _, base := range []string{"", ".", ".."} {
		if got := safeBase(base); got != "spill" {
			t.Errorf("safeBase(%q) = %q", base, got)
		}
	}
}
