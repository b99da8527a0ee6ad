package ipcguard

import "golang.org/x/sys/unix"

// arches are the syscall ABIs a process on amd64 can use: the native one
// and i386 (int 0x80). x32 calls (numbers with bit 30 set) are refused.
var arches = []abi{
	{audit: unix.AUDIT_ARCH_X86_64, socket: 41, socketpair: 53, connect: 42, ioUringSetup: 425, socketcall: -1, x32: true,
		open: 2, creat: 85, openat: 257, openat2: 437, truncate: 76, truncate64: -1, openByHandleAt: 304, mknod: 133, mknodat: 259},
	{audit: unix.AUDIT_ARCH_I386, socket: 359, socketpair: 360, connect: 362, ioUringSetup: 425, socketcall: 102,
		open: 5, creat: 8, openat: 295, openat2: 437, truncate: 92, truncate64: 193, trunc64Low: 1, openByHandleAt: 342, mknod: 14, mknodat: 297, compat: true},
}
