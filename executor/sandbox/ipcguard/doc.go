// Package ipcguard keeps a sandboxed command from reaching the host's
// processes through the filesystem's IPC endpoints: at the levels without
// network (read-only, workspace), a path-bound Unix socket outside the
// command's private /tmp cannot be connected to, whoever listens on it (a
// Docker socket under $HOME, git's fsmonitor socket in the workspace, an
// agent's socket anywhere the sandbox shows).
//
// # Contract
//
// A Guard is a seccomp filter and its supervisor in the daemon.
// Guard.Install loads the filter on the calling OS thread, which must be
// locked for good and start nothing but sandboxes (bubblewrap); the
// filter is inherited by every process started from that thread and all of
// theirs, and cannot be removed. Under the filter:
//
//   - connect(2) is answered by the supervisor, which makes the connect
//     itself, on the caller's own socket (pidfd_getfd) with its own copy of
//     the address, and returns the result:
//   - a path-bound AF_UNIX address is resolved once in the caller's view
//     (its root; its cwd for a relative path) with openat2 RESOLVE_IN_ROOT
//     and magic links refused, to an inode held open; only a socket on the
//     caller's private /tmp (a tmpfs that is not the daemon's /tmp) is
//     connected, through /proc/self/fd to that very inode. Anything else
//     fails with EACCES, as a socket without write permission does.
//   - abstract and unnamed AF_UNIX, AF_INET, AF_INET6 and AF_UNSPEC
//     addresses are connected as given: the socket's network namespace
//     resolves them, and at these levels it is the sandbox's own (an
//     abstract socket of the host is not found: ECONNREFUSED).
//   - every other family fails with EACCES.
//   - socket(2) and socketpair(2) of an AF_UNIX type other than SOCK_STREAM
//     and SOCK_SEQPACKET fail with EACCES: a datagram socket reaches any
//     path with sendto/sendmsg, whose address the filter cannot see (a
//     stream or seqpacket socket ignores or refuses an address there).
//     AF_VSOCK sockets fail with EACCES (vsock is not confined by a
//     network namespace).
//   - io_uring_setup(2) (its requests bypass seccomp) and socketcall(2)
//     (its arguments are out of the filter's sight) fail with ENOSYS, and
//     so does every call of an ABI the filter does not list (x32).
//
// Because the check is made on the inode that is then connected, and the
// address read once into the supervisor, nothing the caller's other threads
// or processes do meanwhile (rewriting the address, swapping a symlink,
// renaming a directory) changes what is connected: the guard holds by
// construction, not by winning a race (TestWaysOutBlockedGuarded flips
// the address between /tmp and $HOME during 300+ connects). Nor can a
// command take the notifications with a filter of its own that answers
// CONTINUE: the kernel refuses a notifying filter below one that has a
// listener (EBUSY).
//
// The supervisor needs Linux 5.6 (pidfd_getfd, openat2); Install fails
// where it is missing, and the caller refuses the levels the guard serves.
// Guard.Close stops the supervisor: a filtered process left then gets
// ENOSYS from connect (fail closed). The supervisor works from a
// non-dumpable daemon, root or not (the tests run it as both).
//
// Ordinary work keeps working: a server and client on /tmp (by absolute or
// relative path), socketpair(2) of stream sockets, pipes, loopback TCP in
// the sandbox's network namespace.
//
// # Cost
//
// Nothing per command: the filter is loaded once, on one thread, and a
// command that does not connect never meets the supervisor (`bwrap … bash
// -c true` makes no connect). Measured paired on a loaded 2-core machine
// (load 20–26): a sandboxed foreground `true` guarded / unguarded, median
// ratio 1.009–1.025 (BenchmarkGuardOverhead in executor/sandbox), a bare
// bwrap from the guarded thread / a plain one 1.09 (medians 118.1 and
// 117.7 ms, BenchmarkSandboxStart). A connect costs a round trip to the
// daemon and about twenty system calls there: a loopback TCP connect took
// 236 µs guarded, 68 µs plain (BenchmarkConnect), under the same load.
//
// # Known limits
//
//   - FIFOs are not covered: a FIFO outside /tmp that a host process reads
//     can be opened for writing where the sandbox shows it (read-only
//     mounts do not stop that). Landlock's WRITE_FILE right would refuse it
//     outside the writable roots, but Landlock must be applied inside
//     bubblewrap after its mounts (a Landlock domain may not mount), which
//     takes a program run before bash in every sandbox: measured here
//     (paired medians of 60 calls, a loaded 2-core machine), the daemon's
//     own binary as that program made a call 1.80× a bare bwrap (Go's
//     start-up and the binary's package inits, before even exec'ing
//     bash), a minimal Go program 1.54×, both over the per-call budget
//     (1.2×). And inside a writable workspace no Landlock rule tells a
//     FIFO from a file.
//   - A FIFO can still be read: a command may consume what a host process
//     writes to a FIFO it can see.
//   - The supervisor connects with the daemon's credentials: a server on
//     the sandbox's /tmp sees its client's SO_PEERCRED pid as 0 (the
//     daemon is outside the sandbox's pid namespace) and its uid as the
//     daemon's (the same user).
//   - Unix datagram sockets cannot be made at these levels (syslog(3) to
//     /dev/log and datagram socketpairs included); 32-bit programs that
//     use socketcall(2) for their sockets fail.
//   - At most 256 connects are answered at once, across all sandboxes (a
//     connect may block a daemon thread, e.g. on a listener that never
//     accepts); one over that fails at once with EAGAIN
//     [TestInflightBounded]. A command that floods connects to its own
//     stuck listener can so make other sandboxes' connects fail for as long
//     as it runs.
//   - A connect to a path through /proc/self/fd (an O_PATH descriptor) is
//     refused, even to a socket on /tmp.
//   - Landlock's LANDLOCK_ACCESS_FS_RESOLVE_UNIX (merged upstream in 2026)
//     puts path sockets under Landlock in the kernel; Linux 6.18's Landlock
//     (ABI 7) has it not, and it is not used here.
package ipcguard
