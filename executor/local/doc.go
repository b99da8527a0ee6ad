// Package local is the plain executor: the task engine (executor/engine) on
// a Spawner that runs each command as `bash -c` in a process of its own on
// this machine, unconfined (executor.LevelOff only).
//
// # Processes
//
// Every command gets its own session and process group (Setsid): it has no
// controlling terminal, so /dev/tty prompts fail at once, and the whole group
// can be signalled. stdin is /dev/null unless Spec.Stdin is given; the
// daemon's stdin (the protocol stream) is never passed on. A script longer
// than 64 KiB is fed on fd 3 and sourced (`bash -c '. /dev/fd/3' bash`), so
// commands of any length run with `bash -c`'s $0 and exit semantics.
//
// The leader's exit is observed without reaping it, so the leader stays an
// unreaped zombie and its pid, the group id, cannot be recycled before the
// engine's last signal. The per-OS code lives in _linux.go and _darwin.go
// files:
//
//   - Linux: waitid(P_PIDFD, WEXITED|WNOWAIT) on a non-blocking pidfd the Go
//     poller watches, so a waiting command holds no OS thread (P_PID and a
//     blocking waitid where pidfds are missing, before Linux 5.10).
//   - darwin: a kqueue EVFILT_PROC/NOTE_EXIT (awaitExit over kqueueExits).
//     kqueue refuses (ESRCH) to watch a process that has already exited;
//     the pid is then confirmed, from sysctl kern.proc.pid, to be our
//     child and a zombie (or exiting) before the exit counts as seen —
//     otherwise Signal is disabled for it. XNU's killpg answers EPERM for a
//     group of zombies; after the leader's exit that is taken as "gone".
//
// awaitExit and the signal-error rule are shared, untagged code, tested on
// Linux with a scripted source and with a pidfd source that has kqueue's
// semantics (the conformance suite runs on it).
//
// Every process is started from one dedicated, locked OS thread that lives
// as long as the Spawner: a parent-death signal is tied to the forking
// thread, and executor/sandbox relies on bubblewrap's --die-with-parent.
// A Launch that names a Guard is forked from that guard's thread, another
// such thread, which first ran the guard's setup (executor/sandbox/ipcguard
// loads its seccomp filter there, so that only those children inherit it;
// the sandbox holds two guards, one per filter).
//
// # Programs
//
// Spawner.StartProgram runs a long-lived program the daemon talks to over
// its stdin and stdout (an MCP stdio server: internal/mcp) through the same
// code: Start's session and process group, the exit seen without reaping,
// the group's leftovers killed while the zombie holds its id, then the
// reap; Program.Stop is the commands' kill path (engine.Escalate: stdin
// closed, TERM, grace, KILL to the group). One supervisor for everything
// the daemon starts.
//
// # Process limits
//
// On Linux, where the daemon can make a pids cgroup, every command (a sandboxed one
// too) is born in one of its own, below one cgroup for all of the daemon's
// commands: Limits.Pids per command (1024), Limits.TotalPids for all of them
// (4096, at most half of pid_max), so the daemon keeps a reserve. Below a
// shared budget (a pids.max on the daemon's cgroup or above it: a container,
// a systemd TasksMax) the daemon keeps a quarter of the room it finds at
// start (at least 64 tasks, at most half) for its own threads and
// processes; all commands share the rest and one gets at most half of
// that, so a fork bomb can starve neither the daemon nor the other
// commands. On cgroup
// v2 (pids enabled for the daemon's cgroup) the child is placed with
// CLONE_INTO_CGROUP; on v1 the spawn thread moves into the command's cgroup
// before the fork, so the child is born in it either way, with no window.
// The next command's cgroup is made, and on v1 entered, right after each
// fork, off the spawn's path. Once its command was reaped, a command's
// cgroup is parked and reused for a later command as soon as no task is
// left in it (at most eight are parked; one something escaped into stays
// until its processes end, or until the daemon stops), so a command costs
// no cgroup mkdir or rmdir. A command that hit its limit ends with
// Exit.LimitHit "pids" (its forks failed with EAGAIN; it was not killed).
// Spawner.LimitsUnavailable says why no limit applies when none can be set.
// darwin has no cgroups and no limit; RLIMIT_NPROC is not used because it
// counts all of the user's processes, not one command's.
//
// Spawner.Prepare and Spawner.Start are the two halves of Spawn, exported so
// a wrapping spawner can put a program in front of bash (see
// executor/sandbox).
//
// # What the daemon must do
//
// Call MakeNonDumpable (on Linux, so a command cannot read
// /proc/$PPID/environ; on darwin it returns an error saying that nothing
// can) and ResetSignalDispositions (so commands do not inherit an ignored
// SIGHUP or SIGINT) once at start, and Shutdown on exit.
//
// # Known limits
//
// A process that leaves the group on purpose (setsid, a double fork into a
// new session) escapes the kill; only a PID namespace (executor/sandbox) or
// a cgroup catches it. If the daemon itself is SIGKILLed its process groups
// live on. Root can still read a non-dumpable daemon's environment. Nothing
// is confined: a command can read and write whatever the daemon's user can.
// Without a writable pids cgroup (an unprivileged daemon on cgroup v1, or a
// v2 cgroup whose pids controller is not delegated) commands run without a
// process limit. On v1 a fork refused by the total limit is not reported as
// the command's LimitHit. The shared budget is read once, at start: what
// other processes in a shared cgroup start later comes out of the
// daemon's reserve. On cgroup v2 the daemon's own cgroup must have the pids
// controller enabled for its children (cgroup.subtree_control; e.g. a
// systemd unit with Delegate=pids); the daemon does not enable it itself.
//
// On darwin: no process limit at all; a command can read the daemon's
// start-up environment (sysctl KERN_PROCARGS2, `ps -E`), the API key
// included if it came from the environment; the kqueue and sysctl code is
// vetted and built in CI but has not run on a Mac there (its logic runs on
// Linux, see above).
package local
