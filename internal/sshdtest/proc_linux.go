package sshdtest

import "syscall"

// dieWithTest makes a started server die with the test binary (a timeout
// panic must not leave sshd running).
func dieWithTest() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
