package ipcguard

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOverwritesReadNoStatus: where the kernel gives a pidfd's credentials
// (PIDFD_GET_INFO, Linux 6.13), a sandboxed command's overwrites of an
// existing file are answered without a read of its /proc status (the
// file's mode stays its own); a create reads it once, for the umask it
// applies; and a symlink into /proc/self/fd still leads to the caller's
// own descriptor (its pid namespace's ids are read when resolution gets
// there).
func TestOverwritesReadNoStatus(t *testing.T) {
	requireTools(t, -1)
	self, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		t.Fatal(err)
	}
	info := unix.PidfdInfo{Mask: unix.PIDFD_INFO_CREDS}
	err = unix.IoctlPidfdInfo(self, &info)
	unix.Close(self)
	if err != nil {
		t.Skipf("this kernel gives no pidfd credentials (PIDFD_GET_INFO, Linux 6.13): %v; every caller is read whole", err)
	}
	g := New(Config{})
	defer g.Close()
	reads, _ := writeScript(t, g)
	if reads > 2 {
		t.Errorf("%d reads of a /proc status for 22 writing opens, want 2 at most (the create's umask, the /proc/self/fd link's ids)", reads)
	}
}

// writeScript runs, in a sandbox started from a thread guarded by g, a
// create (umask 077), 20 overwrites of an existing file (mode 0640) and a
// write through a symlink to /proc/self/fd/1, checks what they made, and
// returns how many /proc status reads and worker hops the supervisor made.
func writeScript(t *testing.T, g *Guard) (reads, hops int64) {
	t.Helper()
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatal(err)
	}
	th := newThread(t, g)
	ws := t.TempDir()
	existing := filepath.Join(ws, "existing")
	if err := os.WriteFile(existing, []byte("old\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(existing, 0o640); err != nil {
		t.Fatal(err)
	}
	script := `umask 077; echo new > created; for i in $(seq 20); do echo over > existing; done; ln -s /proc/self/fd/1 tofd1; echo viafd > tofd1`
	args := append(append([]string{"bwrap"}, bwrapArgs(nil, ws)...), "--", "bash", "-c", script)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	before, hopsBefore := statusReads.Load(), workerHops.Load()
	_, err = th.run(bwrap, args, &os.ProcAttr{Files: []*os.File{nil, w, os.Stderr}})
	w.Close()
	reads, hops = statusReads.Load()-before, workerHops.Load()-hopsBefore
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 64)
	n, _ := r.Read(out)
	r.Close()
	if got := string(out[:n]); got != "viafd\n" {
		t.Errorf("through a symlink to /proc/self/fd/1 the command wrote %q to its stdout, want viafd", got)
	}
	for _, f := range []struct {
		name, content string
		mode          os.FileMode
	}{{"created", "new\n", 0o600}, {"existing", "over\n", 0o640}} {
		b, _ := os.ReadFile(filepath.Join(ws, f.name))
		fi, err := os.Stat(filepath.Join(ws, f.name))
		if err != nil || string(b) != f.content || fi.Mode().Perm() != f.mode {
			t.Errorf("%s: %q, mode %v, %v; want %q, mode %v", f.name, b, fi.Mode().Perm(), err, f.content, f.mode)
		}
	}
	return reads, hops
}

// TestDispatchedOpensNeedNoHop: a daemon without capabilities answers a
// command's writing opens on workers of its own identity (dispatch), so
// none is handed on to another thread; answered on goroutines (a root
// daemon's way), each open is one hop to a worker and back. (Forced here:
// the test may run as root.)
func TestDispatchedOpensNeedNoHop(t *testing.T) {
	requireTools(t, -1)
	for _, dispatch := range []bool{true, false} {
		g := New(Config{})
		g.dispatches = dispatch && g.meOK
		_, hops := writeScript(t, g)
		g.Close()
		switch {
		case dispatch && hops != 0:
			t.Errorf("dispatched: %d hops to another worker, want none", hops)
		case !dispatch && hops < 21:
			t.Errorf("on goroutines: %d hops to a worker for 22 writing opens, want one each", hops)
		}
	}
}
