package acp_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
)

// session/delete over the real binary removes from the change store
// (<state>/changes) every content only the deleted session used — what
// its first look kept and what its command wrote — judged on disk, while a
// content another session also holds stays.
func TestE2ESessionDeleteRemovesItsChangeContents(t *testing.T) {
	d := startDaemon(t, acptest.ZedCapabilities(), []string{"--sandbox", "off"})
	marker := acptest.NewMarker()
	secret, shared := "secret-of-A-"+marker, "shared-"+marker
	dirA, dirB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	writeAt(t, filepath.Join(dirA, "secret.txt"), secret+" v1\n")
	writeAt(t, filepath.Join(dirA, "shared.txt"), shared+"\n")
	writeAt(t, filepath.Join(dirB, "shared.txt"), shared+"\n")
	a := d.newSession(dirA)
	d.prompt(a, "!echo "+secret+" v2 > secret.txt")
	b := d.newSession(dirB)
	d.prompt(b, "!echo b2 > other.txt")
	store := filepath.Join(d.stateDir, "changes")
	if got := filesHolding(t, store, secret); len(got) == 0 {
		t.Fatal("the change store never kept A's contents")
	}

	if err := d.Call(ctxT(t), "session/delete", map[string]any{"sessionId": a}, nil); err != nil {
		t.Fatalf("session/delete: %v", err)
	}
	if got := filesHolding(t, store, secret); len(got) != 0 {
		t.Errorf("after session/delete the change store still holds the deleted session's contents: %q", got)
	}
	if got := filesHolding(t, store, shared); len(got) == 0 {
		t.Error("a content the live session also uses was removed")
	}
}

// filesHolding are the files under dir whose bytes contain needle.
func filesHolding(t *testing.T, dir, needle string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(needle)) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
