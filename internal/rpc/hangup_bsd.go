//go:build unix && !linux

package rpc

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// cloexecPipe makes a pipe whose ends are close-on-exec before any fork can
// see them: without pipe2 (darwin), the ends are marked under
// syscall.ForkLock, as os.Pipe does.
func cloexecPipe(p *[2]int) error {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	if err := unix.Pipe(p[:]); err != nil {
		return err
	}
	unix.CloseOnExec(p[0])
	unix.CloseOnExec(p[1])
	return nil
}
