//go:build unix

package credentials

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// isTerminal reports whether fd is a terminal.
func isTerminal(fd uintptr) bool {
	_, err := unix.IoctlGetTermios(int(fd), ioctlGetTermios)
	return err == nil
}

// echoOff stops the terminal fd from echoing what is typed (Enter still
// moves to a new line) and returns what puts the old settings back. Line
// editing and Ctrl-C keep working.
func echoOff(fd uintptr) (restore func(), err error) {
	old, err := unix.IoctlGetTermios(int(fd), ioctlGetTermios)
	if err != nil {
		return nil, fmt.Errorf("read the terminal's settings: %w", err)
	}
	t := *old
	t.Lflag &^= unix.ECHO
	t.Lflag |= unix.ECHONL | unix.ICANON | unix.ISIG
	if err := unix.IoctlSetTermios(int(fd), ioctlSetTermios, &t); err != nil {
		return nil, fmt.Errorf("turn the terminal's echo off: %w", err)
	}
	return func() { _ = unix.IoctlSetTermios(int(fd), ioctlSetTermios, old) }, nil
}
