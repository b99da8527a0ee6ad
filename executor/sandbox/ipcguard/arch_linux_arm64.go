package ipcguard

import "golang.org/x/sys/unix"

// arches are the syscall ABIs a process on arm64 can use: the native one
// and 32-bit ARM (compat). arm64 has no open(2) nor creat(2).
var arches = []abi{
	{audit: unix.AUDIT_ARCH_AARCH64, socket: 198, socketpair: 199, connect: 203, ioUringSetup: 425, socketcall: -1,
		open: -1, creat: -1, openat: 56, openat2: 437, truncate: 45, truncate64: -1, openByHandleAt: 265, mknod: -1, mknodat: 33},
	{audit: unix.AUDIT_ARCH_ARM, socket: 281, socketpair: 288, connect: 283, ioUringSetup: 425, socketcall: 102,
		open: 5, creat: 8, openat: 322, openat2: 437, truncate: 92, truncate64: 193, trunc64Low: 2, openByHandleAt: 371, mknod: 14, mknodat: 324, compat: true},
}
