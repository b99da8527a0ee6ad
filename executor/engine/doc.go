// Package engine is the task engine every executor shares: it turns a small
// Spawner (start `bash -c` in a directory with an environment and pipes,
// wait for the leader's exit without releasing it, signal the whole group)
// into an executor.Executor.
//
// The engine owns everything above the process: Resolve, the task registry
// ("bash-1", "bash-2", …) with the owner stamped on each task for life,
// bounded output rings, spill files, incremental reads, completion notices,
// timeouts, sandbox levels (a Spawner that confines implements Leveler),
// and the one kill path.
//
//	sp, _ := local.NewSpawner(local.SpawnerConfig{})
//	ex, _ := engine.New(sp, engine.Config{StateDir: dir, BaseEnv: env})
//
// # Processes
//
// Completion is decided by the leader's exit (Process.Wait), which leaves
// the leader unreleased (locally an unreaped zombie), so the group id cannot
// be recycled. Then leftovers (background jobs of a finished command) get
// TERM, the pipes get a short window to drain, the group gets KILL, and only
// then is the process released; no signal is sent to a group after that.
// `sleep 100 & echo hi` therefore returns at once, and the sleep dies with
// the group.
//
// Timeout, context cancellation, Kill, KillOwned and Shutdown all stop a
// command the same way: TERM to the group, Config.Grace, KILL to the group.
//
// # Output
//
// Two goroutines drain stdout and stderr for the command's whole life and
// never fail, so a child never blocks on a full pipe or dies of SIGPIPE
// because of us. Output goes to bounded rings (Config.CaptureBytes each:
// the interleaved stream, and for a foreground run whose two streams both
// printed, stdout's and stderr's too; while one stream alone prints, the
// interleaved ring is its tail, and its pipe reader reads straight into
// the ring's blocks: the bytes are not copied at all), so memory stays flat
// however much a command prints. When the output outgrows Config.SpillAfter, a spill
// file is created (0600, O_EXCL|O_NOFOLLOW, in a 0700 per-owner directory
// under <StateDir>/spill, all through an os.Root) and receives the complete
// output from the start; past Config.SpillCap it is removed and never
// advertised. A quiet command never touches the disk.
//
// Before anything keeps output, Config.Redact's secrets are replaced by
// "[redacted: NAME]" (see Label): the live chunks, the rings (Result and
// ReadResult) and spill files all see the redacted stream. Each stream is
// redacted as it arrives; a tail that could still grow into a secret (at
// most the longest secret less one byte) is held back until the next read
// decides it, and passed on when the stream ends. Of secrets starting at
// the same byte the longest wins; values shorter than MinSecretLen are not
// redacted. AllowedSecrets picks the values an allow list let through the
// scrub.
//
// A spill file that cannot be created or written is removed and the
// results carry why (Result.SpillError, ReadResult.SpillError).
//
// <StateDir>/spill is checked as the sessions directory is (internal/privdir:
// not a symlink, a directory of this user, writable by no one else; a mode
// such as 0755 is repaired to 0700) when the engine starts and again before
// each spill file, where its path must still name the directory the engine
// holds open (the path is what the model is given and what the sandbox
// binds). A refused or swapped directory is logged once per refusal; while
// it stands, commands still run, no spill file is made, and the results say
// why (ErrUnsafeDir's text). A safe directory put in its place is used again.
//
// A live observer is fed by one delivery goroutine that copies what arrived
// since its last delivery out of the interleaved ring (the pipe readers
// copy nothing for it), at most one batch per 10 ms while output streams;
// output it fell behind on by more than the ring (Config.CaptureBytes) is
// dropped and counted in Chunk.Dropped.
//
// # Environment
//
// Commands get Config.BaseEnv plus settings that keep tools from waiting on
// a human (PAGER=cat, GIT_TERMINAL_PROMPT=0, TERM=dumb, CI=1, …) and the
// marker DSH_ACP=1; Spec.Env is merged last, unscrubbed. ScrubEnv is the
// credential scrub a local executor applies to the daemon's environment.
//
// # Levels
//
// Resolve fills an empty Request.Level with the spawner's default; Run and
// Start refuse a level the spawner does not offer with an error wrapping
// executor.ErrSandbox, before anything starts. The engine implements
// executor.Confiner from the spawner's Leveler (LevelOff alone without one).
//
// # Known limits
//
// The spill directory's parent (the state directory) is trusted as it is:
// whoever can rename entries in it can swap spill/ between the check before
// a spill file and the sandbox's bind of the owner's directory by path.
//
// The engine cannot stop what its Spawner's group does not contain: with the
// plain spawner, a process that leaves the group (setsid) escapes the kill.
// See executor/local and executor/sandbox for what each spawner contains.
//
// Redaction matches the exact bytes of a value: a command that encodes,
// splits with escapes or otherwise transforms a secret (base64, `rev`, ANSI
// codes between its characters) is not caught; it guards against accidents,
// not against a command bent on leaking. Holding back a possible secret's
// start delays those few bytes until more output or the end of the stream;
// holding back one stream's tail can shift its interleaving with the other
// stream by those bytes.
package engine
