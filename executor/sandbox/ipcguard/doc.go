// Package ipcguard keeps a sandboxed command from reaching the host's
// processes through the filesystem's IPC endpoints, and from writing
// through a hard link: at the levels without network (read-only,
// workspace), a path-bound Unix socket outside the command's private /tmp
// cannot be connected to, whoever listens on it (a Docker socket under
// $HOME, git's fsmonitor socket in the workspace, an agent's socket
// anywhere the sandbox shows), and a FIFO outside that /tmp, unless a
// sandboxed command made it, cannot be opened for writing, whoever reads
// it; at every confined level (workspace-network too, with
// Config.LinksOnly) a write to a file with more than one link (a
// workspace file hard-linked into pnpm's store outside it) goes to a copy
// of its own, leaving the other links unchanged.
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
//   - open(2) and openat(2) whose flags hold O_WRONLY, O_RDWR, O_CREAT or
//     O_TRUNC (the filter reads the flags register: a read-only open never
//     leaves the kernel), except an exclusive create (O_CREAT|O_EXCL: the
//     kernel makes a new file or fails, so there is no FIFO, second link or
//     path swap to judge; it stays in the kernel), creat(2), truncate(2)
//     and truncate64(2) are made
//     by the supervisor, which answers with the descriptor it opened
//     (SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SEND: the call
//     returns its number in the caller, FD_CLOEXEC set as O_CLOEXEC asked):
//   - the path is read once, made absolute in the caller's view (its cwd,
//     or the directory its dirfd names) and resolved inside the caller's
//     root: every component but the last by openat2 RESOLVE_IN_ROOT with
//     magic links refused, the last one by hand (O_PATH|O_NOFOLLOW; a
//     symlink followed the same way, unless O_NOFOLLOW, up to 40), to an
//     inode held open. /proc/self/fd/N, /proc/thread-self/fd/N, /dev/fd/N
//     and /dev/stdin, stdout, stderr are the caller's own descriptor N,
//     taken with pidfd_getfd.
//   - the decision is made on that inode: a FIFO opened for writing (or
//     reading and writing) fails with EACCES unless it is on the caller's
//     private /tmp, is an anonymous pipe of the caller's own, or was made
//     by a sandboxed command (mknod(2) and mknodat(2) of a FIFO are made
//     by the supervisor, which records the new inode's device, number and
//     birth time; a host's FIFO renamed to that name meanwhile has an
//     older birth and is not recorded); /dev/tty
//     fails with ENXIO (it would be the daemon's terminal); a file on
//     procfs or sysfs fails with EACCES (the daemon's open would be judged
//     in the daemon's namespaces: a sysctl of the host's); a regular file
//     with more than one link, opened for writing or truncated, is first
//     replaced in its directory by a copy (breakLink: the bytes, the mode
//     and, where the caller may set them, owner and group, written under a
//     temporary name and renamed over the entry), and the write goes to
//     the copy. Where the copy cannot be made (no write permission on the
//     directory, a read-only mount, a file the caller cannot read) the
//     open fails with that error: the link is never written through. A
//     hard link reached through the caller's own descriptor fails with
//     EACCES (no directory to break it in).
//   - the open itself (O_CREAT, O_EXCL, O_TRUNC, O_APPEND, O_DIRECTORY,
//     O_NONBLOCK and the other flags as given; O_TMPFILE in the resolved
//     directory; O_PATH as the held inode) is made on the held inode
//     through /proc/self/fd, or for a new file by openat on the held
//     directory with O_EXCL (a name that appeared meanwhile is decided
//     again), on a worker thread that took the caller's filesystem uid
//     and gid, its groups and its umask and holds no capability at all:
//     the permission checks are the caller's, on the caller's mounts (a
//     read-only one stays so), and a root daemon opens nothing its
//     capability-less sandbox could not. The caller's ids come from its
//     pidfd (PIDFD_GET_INFO, Linux 6.13) where they are the daemon's: its
//     groups are then the daemon's too (a command cannot change them
//     without CAP_SETGID, and started with its launcher's). Its /proc
//     status is read only where a call needs more: its umask to create a
//     file, its pid namespace's ids for a path into /proc or /dev/fd (met
//     at any step of the resolution, which then starts again), or where
//     the kernel has no such ioctl or the ids differ. A daemon without
//     capabilities (any but root) answers each such call whole on a worker
//     of its own identity (dispatch), so the open needs no hop to another
//     thread; a root daemon answers on a goroutine, whose rights reading a
//     non-dumpable caller's /proc needs, and hops to a worker for the open.
//   - openat2(2) fails with ENOSYS (its flags are behind a pointer the
//     caller could rewrite after a check; glibc, Go and Rust fall back to
//     openat) and open_by_handle_at(2) with EPERM.
//   - a caller holding any effective capability is let through as made
//     (CONTINUE): that is bubblewrap (or unshare(1)) setting the sandbox
//     up, with every capability of the user namespace it just made (its
//     uid_map, its mount points, its max_user_namespaces), and so is the
//     daemon's own process (the Go runtime writing a child's uid_map).
//     This relies on the launcher's contract: the command and everything
//     it starts hold no capability, ever (bwrap --unshare-user
//     --disable-userns --cap-drop ALL, with no_new_privs: an empty
//     bounding set, no user namespace to make, no setuid exec). A launcher
//     that left the command a way to a capability would leave the file
//     rules open to it.
//
// A Guard made with Config.LinksOnly, for a level with network, keeps
// only the hard-link rule: its filter leaves sockets alone (connect,
// socket, socketpair and socketcall are the kernel's) and its supervisor
// lets a FIFO be opened for writing; io_uring stays refused (its opens
// would pass the supervisor by). Every other file rule above holds as
// written: writing opens are made by the supervisor, procfs and sysfs
// refuse them, /dev/tty is ENXIO, openat2 ENOSYS, and the bound on calls
// answered at once applies (per Guard). executor/sandbox installs one on a
// spawn thread of its own, beside the whole guard's, and starts
// workspace-network's sandboxes from it.
//
// Because the check is made on the inode that is then connected, and the
// address read once into the supervisor, nothing the caller's other threads
// or processes do meanwhile (rewriting the address, swapping a symlink,
// renaming a directory) changes what is connected: the guard holds by
// construction, not by winning a race (TestWaysOutBlockedGuarded flips
// the address between /tmp and $HOME during 300+ connects). The same holds
// for opens: the kernel never resolves the caller's path again, the
// caller receives the inode the decision was made on (TestFileRacesHeld
// swaps a name between a symlink to a $HOME FIFO, or a hard link to a file
// outside, and a regular file during hundreds of opens). Nor can a
// command take the notifications with a filter of its own that answers
// CONTINUE: the kernel refuses a notifying filter below one that has a
// listener (EBUSY).
//
// The supervisor needs Linux 5.6 (pidfd_getfd, openat2) and 5.14
// (SECCOMP_ADDFD_FLAG_SEND); Install fails where they are missing, and the
// caller refuses the levels the guard serves. Guard.Close stops the
// supervisor: a filtered process left then gets ENOSYS from connect and
// from every writing open (fail closed). The supervisor works from a
// non-dumpable daemon, root or not (the tests run it as both).
//
// Ordinary work keeps working: a server and client on /tmp (by absolute or
// relative path), socketpair(2) of stream sockets, pipes, loopback TCP in
// the sandbox's network namespace; writing, appending and creating files,
// `>/dev/null`, `2>&1`, `>/dev/stderr`, heredocs, process substitution,
// FIFOs and hard links on /tmp, `git add` and `git commit`
// (TestFIFOsAndLinksHeld).
//
// # Cost
//
// Per command, nearly nothing: the filter is loaded once, on one thread; a
// command meets the supervisor only when it connects or opens a file for
// writing (an exclusive create aside). `bwrap … bash -c true` makes 13
// notifications: 12 are bubblewrap's own set-up writes (uid_map,
// setgroups, gid_map, mount points, max_user_namespaces), from a caller
// holding capabilities, and one is bash's open of /dev/tty. All 13 are
// answered on the supervisor's loop thread (Guard.quick: one capget(2),
// or the path read, and the answer), and SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
// (Linux 6.6) keeps the caller and the supervisor on one CPU: a set-up
// open's round trip fell from 140 µs to 11 µs over a plain open (2 000
// pairs), where a goroutine per notification and two cross-CPU wake-ups
// had cost the rest.
//
// Measured on a quiet machine (2 cores, load about 1), paired run by run:
//   - a bare `bwrap … bash -c true` from the guarded thread / a plain
//     one: 1.047 (BenchmarkSandboxStart, 50 pairs); the whole filter / the
//     socket rules alone: 1.02-1.09 over four runs (BenchmarkFileRulesStart;
//     1.11-1.16 before the loop answered the set-up);
//   - a sandboxed foreground `true` through the executor, guarded /
//     unguarded: 1.125 at workspace, 1.058 at workspace-network (60 pairs;
//     1.17-1.23 before; BenchmarkGuardOverhead in executor/sandbox);
//   - a writing open: 229 µs guarded, 35 µs plain (BenchmarkWriteOpen;
//     1 000 writing opens by bash in a sandbox: +206-215 µs each). Its
//     share is the caller's /proc status (50-70 µs: identity and umask;
//     an overwrite no longer reads it where the pidfd gives the ids),
//     the path read and resolved (about 45 µs), two hops to and from the
//     worker thread with the caller's identity (about 37 µs; none for a
//     daemon without capabilities, whose worker answers whole: overwrites
//     as uid 65534, +139-174 µs each against +148-192 µs), the open
//     itself, and the answer (SECCOMP_IOCTL_NOTIF_ADDFD, about 40 µs);
//   - one command writing 500 files (`echo x > f$i`): 2.82 (195 ms against
//     70 ms); git init, 500 files written, git add and git commit: 1.35
//     (632 against 538 ms; 522 notifications a run, 1 275 before
//     exclusive creates stayed in the kernel; BenchmarkGitCommit);
//   - a loopback TCP connect: 215 µs guarded, 66 µs plain
//     (BenchmarkConnect).
//
// A build that writes many files pays the per-open figure. Reads (open
// without a writing flag, read(2) and write(2) on descriptors already
// open) never leave the kernel.
//
// # Known limits
//
//   - A FIFO can still be read: a command may consume what a host process
//     writes to a FIFO it can see.
//   - A FIFO a sandbox made is writable where the filesystem records
//     birth times (statx STATX_BTIME: ext4, xfs, btrfs, tmpfs); elsewhere
//     (some network filesystems) it is refused like a host's. The record
//     lives as long as the daemon (4 096 FIFOs, the oldest forgotten
//     first): a FIFO made under a daemon before a restart is refused.
//   - Hard links are broken, not refused: the workspace name gets a new
//     inode (the other names keep the old one), so two names inside the
//     workspace that were one file are two after a write through either.
//     The copy's owner and group are the caller's where it may not set the
//     original's (a non-root daemon's files are its own anyway); its
//     timestamps are new. A write through a descriptor the command already
//     held before (one inherited, or opened read-only and reopened through
//     /proc/self/fd for writing: EACCES) is not broken. Metadata changes
//     through a link (chmod, chown, utimes, setxattr) are not guarded and
//     reach the other links.
//   - What the supervisor does not follow as the kernel would: paths
//     through a magic link other than the caller's own descriptors
//     (/proc/self/cwd/…, /proc/self/root/…, /proc/<other pid>/fd/N), and
//     symlinks to /proc/self in the middle of a path (not at its end),
//     fail with ELOOP or ENOENT when opened for writing. Writing to
//     procfs or sysfs files (/proc/self/oom_score_adj, /proc/self/comm)
//     fails with EACCES. /dev/tty fails with ENXIO. openat2(2) fails with
//     ENOSYS. O_NOCTTY is moot: the supervisor's open never makes a
//     terminal the caller's controlling one. fs.protected_regular and
//     fs.protected_fifos are not applied to an O_CREAT open of an existing
//     file (the supervisor reopens it without O_CREAT; at these levels the
//     only shared sticky directory is the private /tmp).
//   - The launcher contract above: a caller with an effective capability
//     is let through. bubblewrap with --unshare-user --disable-userns
//     --cap-drop ALL and no_new_privs keeps every command below that line;
//     a launcher that does not would open the file rules to its commands.
//   - A LinksOnly guard (workspace-network) leaves the host's path
//     sockets and FIFOs within reach: the network is open anyway. off is
//     not guarded.
//   - At most 256 calls (connects and opens) are answered at once, across
//     all sandboxes of a Guard (a connect, or an open of a FIFO waiting
//     for its reader, may block a daemon thread); one over that fails at
//     once with EAGAIN [TestInflightBounded]. A command that floods
//     connects to its own stuck listener (or, under a LinksOnly guard,
//     opens of FIFOs nobody reads) can so make other sandboxes' calls
//     fail for as long as it runs.
//   - The supervisor connects with the daemon's credentials: a server on
//     the sandbox's /tmp sees its client's SO_PEERCRED pid as 0 (the
//     daemon is outside the sandbox's pid namespace) and its uid as the
//     daemon's (the same user).
//   - Unix datagram sockets cannot be made at these levels (syslog(3) to
//     /dev/log and datagram socketpairs included); 32-bit programs that
//     use socketcall(2) for their sockets fail.
//   - A connect to a path through /proc/self/fd (an O_PATH descriptor) is
//     refused, even to a socket on /tmp.
//   - Landlock was measured for FIFOs and not used: its WRITE_FILE right
//     would refuse a FIFO outside the writable roots, but must be applied
//     inside bubblewrap after its mounts by a program run before bash in
//     every sandbox (the daemon's binary as that program: 1.80× a bare
//     bwrap per call, a minimal Go program 1.54×, over the 1.2× budget),
//     and inside a writable workspace no Landlock rule tells a FIFO from a
//     file. LANDLOCK_ACCESS_FS_RESOLVE_UNIX (merged upstream in 2026) puts
//     path sockets under Landlock in the kernel; Linux 6.18's Landlock
//     (ABI 7) has it not.
package ipcguard
