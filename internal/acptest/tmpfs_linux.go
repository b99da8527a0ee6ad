package acptest

import (
	"os"
	"syscall"
	"testing"
)

// MountTmpfs mounts a tmpfs of size (as mount(8) reads it: "2m", "256k")
// at a new directory for the rest of the test, for tests of a full disk.
// It needs root: elsewhere it skips with the reason, and fails under
// CI=true.
func MountTmpfs(t testing.TB, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("acptest: cannot mount a tmpfs: %v", err)
		}
		t.Skipf("acptest: cannot mount a tmpfs (needs root): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// FillDisk writes the file path until its file system is full.
func FillDisk(t testing.TB, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			return
		}
	}
}
