package ipcguard

import "golang.org/x/sys/unix"

// arches are the syscall ABIs a process on amd64 can use: the native one
// and i386 (int 0x80). x32 calls (numbers with bit 30 set) are refused.
var arches = []abi{
	{audit: unix.AUDIT_ARCH_X86_64, socket: 41, socketpair: 53, connect: 42, ioUringSetup: 425, socketcall: -1, x32: true},
	{audit: unix.AUDIT_ARCH_I386, socket: 359, socketpair: 360, connect: 362, ioUringSetup: 425, socketcall: 102},
}
