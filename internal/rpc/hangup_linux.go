package rpc

import "golang.org/x/sys/unix"

// cloexecPipe makes a pipe whose ends are close-on-exec from the start.
func cloexecPipe(p *[2]int) error { return unix.Pipe2(p[:], unix.O_CLOEXEC) }
