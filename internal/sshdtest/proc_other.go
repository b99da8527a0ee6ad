//go:build !linux

package sshdtest

import "syscall"

// dieWithTest has no parent-death signal outside Linux: the test's cleanup
// stops the server.
func dieWithTest() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
