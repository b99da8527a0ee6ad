package sandbox

import (
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// The start gate: why a daemon killed at any moment of a spawn leaves no
// sandbox behind.
//
// bwrap ties itself to its parent with --die-with-parent
// (PR_SET_PDEATHSIG), and, being pid 1 of its pid namespace (see
// launcher), takes every process of the sandbox with it. But it arms the
// signal a while after its fork, and a parent-death signal armed after the
// parent died is tied to whoever adopted the orphan (init): no signal ever
// comes. So the sandbox must not run anything unless the daemon has seen
// that bwrap armed it while its parent was still alive:
//
//  1. bwrap arms --die-with-parent and only then writes its --info-fd.
//  2. The daemon reads the first byte of that info (gate.release). A
//     daemon thread that returns from that read to run Go code is not
//     exiting; and bwrap is moved out of the daemon only once every
//     thread of it is exiting (the kernel hands an orphan to a live
//     sibling of its parent thread first, and sends the signal again
//     then). So at the moment bwrap armed the signal, its parent was a
//     thread of the living daemon, and that thread's exit will deliver
//     it.
//  3. Where unshare(1) sits between the two (a non-dumpable non-root
//     daemon), bwrap's parent is unshare, and the daemon checks, after
//     the read, that unshare has not exited (a pidfd taken at the start):
//     alive now, it was alive, and bwrap's parent, when bwrap armed the
//     signal. unshare's own parent-death signal is armed by the Go
//     runtime, which checks the parent afterwards (see launcher).
//  4. Only then does the daemon write the sandbox's seccomp program (one
//     instruction: allow) to the gate pipe, of which it holds the only
//     write end, and close it. bwrap reads --seccomp to its end after the
//     sandbox is set up and before it runs the command; an empty program
//     (the daemon died, or refused) makes prctl(PR_SET_SECCOMP) fail with
//     EINVAL and bwrap exit before anything of the command ran. A pipe
//     write of 8 bytes is atomic: bwrap reads all of it or nothing.
//
// The pipe's EOF is what a dead daemon leaves, so the gate fails closed;
// nothing depends on which of the daemon's threads exits first, on the
// machine's load, or on how long the daemon's exit takes. The daemon waits
// for no one: the gate is released from a goroutine while bwrap sets the
// mounts up, which takes longer.
type gate struct {
	infoR, infoW *os.File // bwrap's --info-fd
	gateR, gateW *os.File // bwrap's --seccomp
}

// newGate makes the two pipes of a start. Both are close-on-exec in the
// daemon: only the fds handed to bwrap reach it, and the gate's write end
// reaches no process at all.
func newGate() (*gate, error) {
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("pipe: %w", err)
	}
	gateR, gateW, err := os.Pipe()
	if err != nil {
		infoR.Close()
		infoW.Close()
		return nil, fmt.Errorf("pipe: %w", err)
	}
	return &gate{infoR: infoR, infoW: infoW, gateR: gateR, gateW: gateW}, nil
}

// abort closes the gate's write end of a start that did not happen (the
// other ends belong to the Launch).
func (g *gate) abort() { g.gateW.Close() }

// allowAll is a seccomp program of one instruction, RET ALLOW: it lets
// every system call through (a filter below the IPC guard's changes
// nothing it decides), and the kernel caches that verdict per call, so a
// sandboxed command does not pay for it.
var allowAll = func() []byte {
	b := make([]byte, 8) // struct sock_filter {u16 code; u8 jt, jf; u32 k}
	binary.NativeEndian.PutUint16(b, unix.BPF_RET|unix.BPF_K)
	binary.NativeEndian.PutUint32(b[4:], unix.SECCOMP_RET_ALLOW)
	return b
}()

// release confirms, on a goroutine of its own, the start of the bwrap
// started as pid (through a launcher, when launcher is set) and opens the
// gate, or closes it empty; see gate. The caller must not reap pid before
// release returns (Start has just returned it).
func (g *gate) release(pid int, launcher bool) {
	pidfd := -1
	if launcher {
		var err error
		if pidfd, err = unix.PidfdOpen(pid, 0); err != nil {
			g.abort() // cannot check: fail closed
			return
		}
	}
	go g.confirm(pidfd, gateHold)
}

// confirm is release's goroutine; hold is gateHold.
func (g *gate) confirm(pidfd int, hold func()) {
	defer g.gateW.Close()
	if pidfd >= 0 {
		defer unix.Close(pidfd)
	}
	var b [1]byte
	if n, _ := g.infoR.Read(b[:]); n != 1 {
		return // bwrap ended (or the process was released) first
	}
	if pidfd >= 0 && exited(pidfd) {
		return
	}
	if hold != nil {
		hold()
	}
	_, _ = g.gateW.Write(allowAll)
}

// gateHold, set by tests only, runs before a gate opens: a test daemon
// that never opens it stands for one killed before it could.
var gateHold func()

// exited reports whether the process of pidfd has exited, without reaping
// it; an error counts as exited.
func exited(pidfd int) bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PIDFD, pidfd, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	if err != nil {
		return true
	}
	return info.Signo != 0 // zero: nothing to report, still running
}
