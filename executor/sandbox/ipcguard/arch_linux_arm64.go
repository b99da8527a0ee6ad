package ipcguard

import "golang.org/x/sys/unix"

// arches are the syscall ABIs a process on arm64 can use: the native one
// and 32-bit ARM (compat).
var arches = []abi{
	{audit: unix.AUDIT_ARCH_AARCH64, socket: 198, socketpair: 199, connect: 203, ioUringSetup: 425, socketcall: -1},
	{audit: unix.AUDIT_ARCH_ARM, socket: 281, socketpair: 288, connect: 283, ioUringSetup: 425, socketcall: 102},
}
