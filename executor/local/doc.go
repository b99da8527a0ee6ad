// Package local is the default executor.Executor: it runs each command as
// `bash -c` in a process of its own on this machine.
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
// Completion is decided by the leader's exit, observed with
// waitid(WNOWAIT) so the leader stays an unreaped zombie and its pid (the
// group id) cannot be recycled. Then leftovers (background jobs of a
// finished command) get TERM, the pipes get a short window to drain, the
// group gets KILL, and only then is the leader reaped; no signal is sent to
// a group after that. `sleep 100 & echo hi` therefore returns at once, and
// the sleep dies with the group.
//
// Timeout, context cancellation, Kill, KillOwned and Shutdown all stop a
// command the same way: TERM to the group, Config.Grace, KILL to the group.
//
// # Output
//
// Two goroutines drain stdout and stderr for the command's whole life and
// never fail, so a child never blocks on a full pipe or dies of SIGPIPE
// because of us. Output goes to bounded rings (Config.CaptureBytes each:
// stdout, stderr and the interleaved stream for a foreground run; the
// interleaved stream for a background task), so memory stays flat however
// much a command prints. When the interleaved ring first would drop bytes, a
// spill file is created (0600, O_EXCL|O_NOFOLLOW, in a 0700 per-owner
// directory under <StateDir>/spill, all through an os.Root) and receives the
// complete output from the start; past Config.SpillCap it is removed and
// never advertised. A quiet command never touches the disk.
//
// A live observer is fed by one delivery goroutine from a bounded pending
// buffer, at most one batch per 10 ms while output streams; what it cannot
// keep up with is dropped and counted in Chunk.Dropped.
//
// # Environment
//
// Commands get the daemon's environment (snapshotted by New) minus
// credentials (see ScrubEnv), plus settings that keep tools from waiting on
// a human (PAGER=cat, GIT_TERMINAL_PROMPT=0, TERM=dumb, CI=1, …) and the
// marker DSH_ACP=1; Spec.Env is merged last, unscrubbed.
//
// # What the daemon must do
//
// Call MakeNonDumpable (so a command cannot read /proc/$PPID/environ) and
// ResetSignalDispositions (so commands do not inherit an ignored SIGHUP or
// SIGINT) once at start, and Shutdown on exit.
//
// # Known limits
//
// A process that leaves the group on purpose (setsid, a double fork into a
// new session) escapes the kill; only a PID namespace or a cgroup catches
// it. If the daemon itself is SIGKILLed its process groups live on (no
// parent-death signal: it covers only the direct child and is tied to the
// forking thread). Root can still read a non-dumpable daemon's environment.
package local
