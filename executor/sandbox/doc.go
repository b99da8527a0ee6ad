// Package sandbox is the confining executor: the task engine
// (executor/engine) on a Spawner that runs every command at a confined
// level inside bubblewrap (bwrap, found on PATH) and at executor.LevelOff
// as the plain local spawner does.
//
//	ex, err := sandbox.New(sandbox.Config{Config: local.Config{StateDir: dir}})
//	// ex.DefaultLevel(): workspace where bwrap can start here, else off;
//	// ex.Unavailable() says why not.
//
// # What a sandbox is
//
// Each command, foreground or background, gets its own bwrap: new pid, ipc,
// uts and user namespaces (root included: the command keeps no capability
// over the host and may not create user namespaces), a network namespace
// without the network unless the level has it, the host's root read-only, a
// fresh /dev, its own /proc (so no /proc/<pid>/environ of the daemon, even
// for root), a private /tmp and /run (no agent or docker sockets), HOME
// read-only, ~/.cache (and $GOCACHE) as empty throwaway space, the hidden
// list (Config.Hidden, by default the Credentials table, following the
// tools' variables) hidden — directories empty, files unopenable — and the
// state directory and dsh-acp's config directory hidden except the calling
// session's spill directory, shown read-only so a result's full-output path
// can be read. The workspace (the session cwd) is writable at the workspace
// levels and read-only at LevelReadOnly.
//
// # IPC guards (ipcguard.go)
//
// Each confined level's bwrap is started from a spawn thread that holds a
// seccomp filter every process of the sandbox inherits, answered by a
// supervisor in the daemon (executor/sandbox/ipcguard): at read-only and
// workspace the whole guard (no connect to a path socket, no write to a
// FIFO outside the private /tmp, a write through a hard link goes to a
// copy); at workspace-network the links-only guard (the hard-link rule
// alone: sockets and FIFOs are within reach through the network anyway).
// A guard that cannot be installed fails its levels' starts.
//
// # Protection by construction (protect.go)
//
// Inside a writable workspace the protected set (Config.Protected, by
// default DefaultProtected, plus HomeProtected when the home is inside it,
// plus git's program-naming entries of every repository found) is held for
// the whole command whatever the command does: existing entries are
// read-only bind mounts of themselves (a mount point cannot be renamed,
// replaced or unlinked), absent ones get a placeholder mounted the same way
// and removed afterwards only while untouched (placeholders.go; a killed
// daemon's are swept by the next), and every directory between the
// workspace and an entry or a hidden path is bound onto itself, so no
// parent can be moved away. A workspace that no longer is the directory it
// was, or that is reached through a symlink inside another known
// workspace, is refused; other known workspaces inside this one are pinned.
// An absent .git is kept from being created unless the run carries
// executor.Spec.AllowNewRepository (an approved git init).
//
// RemoteWrapper builds the same levels on an ssh host (executor/ssh), in
// bash there, with the additional directories bound as the workspace is,
// and the same protection by construction (remote.go): the same names and
// kinds from the same tables, pins, placeholders shared between the host's
// concurrent commands through a registry in the remote state directory
// (flock, owner = the wrapper's pid and start time, a dead owner's swept by
// the next command), nested repositories, .git files, core.hooksPath,
// HomeProtected and AllowNewRepository; the remote state directory hidden
// except the session's spill directory; other sessions' directories pinned
// and a workspace through a symlink inside one refused. It has no start
// gate, no IPC guard and no workspace-replaced check (remote.go's Known
// limits).
//
// # No survivor, no window at start
//
// The daemon starts bwrap as pid 1 of a pid namespace of its own
// (CLONE_NEWPID, with CLONE_NEWUSER when not root), in a session of its own.
// A non-root daemon that made itself non-dumpable (local.MakeNonDumpable,
// as cmd/dsh-acp does) cannot write the uid_map of a child it forks (the
// child's /proc files are root's until it execs), so there util-linux
// unshare(1) makes the user and pid namespaces and forks bwrap as their pid
// 1; it blocks TERM while it waits, SIGKILLs bwrap if it dies, and dies
// with the daemon (a parent-death signal the Go runtime arms before its
// exec, checking the parent afterwards). The daemon stays non-dumpable
// throughout: no window in which a same-user process could open its
// /proc/PID/mem or environ.
// Three facts follow:
//
//   - When bwrap dies the kernel kills every process below it, whatever
//     session it made: setsid and nohup escapes included. The engine's KILL
//     to the group reaches bwrap (SIGKILL always reaches a pid 1 from
//     outside), so Kill, KillOwned, Shutdown and every timeout leave nothing.
//   - A pid 1 ignores signals it has no handler for, so the engine's TERM
//     reaches the command (which may trap it and exit) and not bwrap: the
//     TERM → grace → KILL path keeps its meaning inside the sandbox.
//   - The start gate (gate_linux.go): bwrap ties itself to its parent with
//     --die-with-parent, but arms it a while after its fork, and a
//     parent-death signal armed once the parent is gone is tied to init.
//     So the sandbox runs nothing until the daemon has seen bwrap arm it
//     while the daemon lived: bwrap writes its --info-fd after arming; the
//     daemon reads the first byte (a thread that returns from that read is
//     not exiting, and bwrap leaves the daemon's children only when every
//     thread of the daemon is exiting) and, where unshare(1) sits between,
//     checks by pidfd that unshare has not exited; only then does it write
//     the one-instruction allow-all program bwrap reads from --seccomp
//     after setting the sandbox up and before running the command. The
//     daemon holds the only write end of that pipe: dead, it leaves EOF,
//     an empty program makes prctl(PR_SET_SECCOMP) fail, and bwrap exits
//     before the command ran. Every bwrap is started from one of three
//     locked OS threads (local.Spawner's spawn thread and its two guard
//     threads, below) that live as long as the executor, because a
//     parent-death signal follows the thread; the launch is the same from
//     each.
//
// Measured (TestStopRightAfterStart, TestDaemonKilledRightAfterSpawn,
// TestUnconfirmedStartRunsNothing): Kill at once, a 1 ms timeout and a
// cancel 0–3 ms after the start, 90 runs; a daemon SIGKILLed 0–4 ms after
// Start returned, as root, as nobody non-dumpable (unshare) and as nobody
// dumpable (1,200 kills, 400 of each, on a 2-core machine at load 14–20:
// no survivor; before the gate about 1 in 100 root kills left one); and a
// daemon killed with its gate held shut: no survivor, and the held
// command never ran.
//
// # Exit status
//
// bwrap reports a command that died of signal n as exit status 128+n;
// Release turns 129…192 back into the signal's name, so Result.Signal names
// a signal death as it does locally.
//
// # Known limits
//
//   - An explicit `exit 129`…`exit 192` reads as a death by that signal.
//   - A stop that lands while bwrap is still setting up (the first few
//     milliseconds) would find no command for its TERM to reach, so it is
//     sent as KILL: nothing ran yet that a grace period could serve. Which
//     case it is, Signal reads from /proc (a process below bwrap that is not
//     named bwrap is the command); a command that itself execs a program
//     named bwrap reads as not started, and its stop is a KILL.
//   - The start gate relies on bwrap's order (--die-with-parent armed
//     before the --info-fd write, --seccomp read after the set-up and
//     before the exec: so in every release since 0.4), on seccomp filters
//     (CONFIG_SECCOMP_FILTER; without them the probe fails and only
//     LevelOff is offered) and on pidfds (Linux 5.3) for a non-dumpable
//     non-root daemon; a daemon that dies with the gate shut leaves
//     bwrap's "prctl(PR_SET_SECCOMP) reported EINVAL" on the command's
//     stderr, which nobody reads. A bwrap started outside this package
//     (RemoteWrapper's, on an ssh host) has no gate.
//   - The workdir must be visible in the sandbox: a workdir outside the
//     workspace under /tmp, /run or a hidden path does not exist there.
//   - A workspace of / makes the whole filesystem writable (hidden and
//     protected paths aside).
//   - Nested repositories are found by a bounded search (4 deep, 3 000
//     directories, not node_modules, reused for 30 s); one created during
//     a command, or past the bounds, is not protected.
//   - A .git that is a symlink to its git directory inside the workspace
//     gets that directory's entries protected and the directory pinned,
//     but the link itself is no mount point: a command can replace it by
//     a repository of its own, which a later git on the host then reads.
//   - A write through a workspace file hard-linked from outside (pnpm's
//     store) goes to a copy at every confined level (ipcguard.go): at
//     workspace-network too, whose sandboxes start under the links-only
//     guard, so writing opens there pay the supervisor's round trip and
//     share its limits (procfs and sysfs writes refused, /dev/tty ENXIO,
//     openat2 ENOSYS; see executor/sandbox/ipcguard).
//   - Placeholders show on the host while a command runs; git operations
//     that write protected entries (git config, worktree add, submodule
//     update, a checkout changing .vscode/ or AGENTS.md) fail at the
//     workspace levels.
//   - A hidden path reached through a symlink is remembered at its target
//     for the daemon's life only.
//   - Where the daemon may not create a user namespace (some AppArmor
//     policies), the probe fails and only LevelOff is offered; so does a
//     non-root daemon without util-linux unshare(1) (the reason says so).
//   - On darwin there is no bubblewrap: only LevelOff is offered, with the
//     reason "no bubblewrap on macOS; the Seatbelt design in
//     docs/security.md is not built" (sandbox_darwin.go); the bubblewrap
//     code is in _linux.go files.
//   - A sandboxed command's end is reported only once everything in its pid
//     namespace has been reaped, a few scheduling hops after bwrap alone
//     would exit: 1.08–1.19× a direct bwrap on a quiet machine, 2–3.5×
//     under heavy CPU contention (BenchmarkForegroundTrue). Against a bare
//     bwrap with the base mounts only (dsh-bench's per-call comparison,
//     BenchmarkVsBareBwrap, 40 pairs on a shared 2-core VM) a call is
//     1.23–1.44× (median 1.37× in nine runs, against 1.42–1.67× for the
//     tree before this round, alternated with it), short of the 1.2×
//     asked, and no sandbox built per command with these promises reaches
//     it here: BenchmarkProtectionFloor — a bare bwrap against the same
//     bwrap with exactly the protection's and hiding's arguments and the
//     placeholders put in and taken out around it, no daemon, guard or
//     gate — is 1.20–1.26× on its own (1.26–1.32× before). What a bare
//     bwrap has not: the protected set's mounts (1.4–1.9 ms: each bind
//     makes bubblewrap 0.8 reparse /proc/self/mountinfo, about fifteen of
//     them in a project without editor files), the plan with its
//     placeholders (0.65–0.8 ms before the start and 0.55 ms after the
//     end on their own, 2 ms in the run: ten placeholder directories
//     renamed from and back to the stash, with their checks; made and
//     removed in place they cost 2–3 ms more on this discard-mounted
//     ext4), the IPC guard (13 notifications a
//     start: bubblewrap's six user-namespace writes and six /dev nodes,
//     bash's /dev/tty; 1.04–1.05× in BenchmarkSandboxStart, 1.1–1.14× at
//     the engine) and the wait for the pid namespace (up to 0.4 ms). The VM
//     these figures come from runs under the PVM hypervisor with pti=on: a
//     system call costs several µs and a context switch far more, which
//     inflates the guard's round trips and the daemon's CPU (5–6 ms a
//     call against 1.7–2 ms for starting and reaping a bare bwrap from
//     the same Go process: the guard's answers 1.3–1.8 ms of it, mostly
//     kernel time around their wake-ups, the plan and placeholders about
//     1 ms, the engine's start the rest). A sandbox kept across commands
//     would remove the mounts and placeholders, but shows its placeholders
//     between commands, computes protection once, and shares a pid
//     namespace across commands' kills: not done.
package sandbox
