// Package ssh is the executor that runs commands on another machine over
// SSH (golang.org/x/crypto/ssh): the shared task engine (executor/engine)
// on a Spawner whose processes are remote. The tools, their result text,
// task ids, ownership, incremental reads, notices and the one
// TERM → grace → KILL path are the engine's, unchanged.
//
//	t, _ := ssh.ParseTarget("ssh://me@build1/srv/proj")
//	ex, err := ssh.New(ssh.Config{Target: t, AgentSocket: os.Getenv("SSH_AUTH_SOCK")})
//
// # The connection
//
// The daemon keeps one connection to the host, dialed by the first command
// (or Executor.CheckDir) and again by the first command after it was lost;
// every command is a session channel of its own. The host key is checked
// against known_hosts (Config.KnownHosts, else ~/.ssh/known_hosts and
// /etc/ssh/ssh_known_hosts): an unknown or changed key is refused with a
// *HostKeyError whose text says how to add the key, and nothing runs —
// there is no trust on first use. Logging in uses the identity file, the
// ssh-agent (the daemon's SSH_AUTH_SOCK; no agent forwarding, commands
// never see it), or ssh's default key files. Keep-alives every 4 s, each
// allowed 8 s, notice a silent network within 12 s.
//
// At each connection a hello learns whether the login shell is a bash that
// can run the reader (else bash is started from it), takes the login
// environment (to scrub it as a local executor scrubs its own: the names
// the scrub drops are unset in every command), and creates the remote spill
// directory (<remote state dir>/spill, 0700, owner checked; old files
// swept).
//
// # Processes
//
// A short command (up to 32 KiB, without Spec.Stdin or Spec.Env) on a host
// whose login shell is bash is sent as the exec request itself: a one-line
// prelude with the script quoted in it. Any other goes through a fixed
// one-line reader that evaluates a prelude sent on stdin, then the script
// and Spec.Stdin, so nothing of it passes through a non-bash login shell's
// parser or the argument limits (a 5 MiB script runs), and a hook's
// environment stays out of the host's process list.
//
// sshd makes the session's shell the leader of a new session and process
// group, without a terminal; the prelude changes to the working directory
// (a missing one is an error wrapping executor.ErrWorkdir and
// fs.ErrNotExist), points stdin at /dev/null (or a private temporary file
// holding Spec.Stdin, removed once open), exports the engine's
// environment, registers the group with the connection's supervisor, prints
// the group id and evaluates the command in place: the leader is the
// command's own shell, and the exit-status or exit-signal sshd reports is
// the command's. Completion is decided by that report, not by output, so
// `sleep 100 & echo hi` returns at once. A command at LevelOff costs no
// remote process beyond its own; a confined one's shell waits for the
// sandbox and exits with its status (see Known limits).
//
// Signals go through the connection's supervisor, a long-lived bash in a
// session of its own started by the hello: Process.Signal queues "T PGID
// START" or "K PGID START" on its stdin and it sends TERM or KILL to the
// group, only while the group is still the command's: process PGID gone
// (the leader exited; leftovers may hold the group) or the leader itself
// (the start time it registered), never a process that took the pid since.
// An SSH "signal" request would reach only a live leader's group and not
// every server honours it; a `kill` over a new channel per signal costs a
// process and a round trip. The supervisor is also what ends the groups
// when the connection drops: at end of its input (sshd closed its pipe, or
// died) it sends TERM to every registered group not yet released, waits the
// grace period and sends KILL. A command in flight then ends with a
// *LostError (errors.Is ErrConnectionLost): Run returns it as an error with
// the output so far; a background task ends Killed, its last line saying
// why. If the supervisor itself ends while the connection lives, the
// connection is closed so that its commands end the same way.
//
// # Files
//
// Spill files live on the host (Spawner implements engine.Spiller): the
// engine writes them through a remote cat into a 0600 file created with
// O_EXCL in a 0700 per-owner directory, and the path the model is given is
// the host's, so its next command can read it. The session's directory is
// the host's too (executor.Remote): the address's path, else the client's
// directory unchanged, checked on the host.
//
// # Known limits
//
//   - The default level is LevelOff. A confined level, when asked for, runs
//     the command inside the host's bubblewrap (sandbox.RemoteWrapper: the
//     local levels' namespaces and mounts, the hidden list with the host's
//     $HOME and variables, the remote state directory hidden except the
//     session's spill directory, the session's additional directories
//     (executor.Spec.Roots) writable at the workspace levels as the
//     workspace is, one missing on the host refusing the command with
//     status 126, util-linux unshare(1) as the launcher), probed once at
//     the first confined command; where the host cannot build it (no
//     bwrap, unshare, flock or GNU coreutils, user namespaces refused),
//     every command at a confined level is refused with the probe's reason
//     (wrapping executor.ErrSandbox). At the workspace levels the protected
//     set is held as locally (pins, placeholders, nested repositories,
//     .git files, core.hooksPath, the home's names, AllowNewRepository),
//     with the placeholders in a registry under <remote state dir>/
//     placeholders; a writable level is refused when the hello could not
//     make the state directory. The wrapper stays the group leader and
//     waits for the sandbox (it no longer execs it), so a confined command
//     costs one process more, and a TERM before the sandbox started ends
//     it by TERM with nothing run. The other sessions' directories the
//     daemon has run confined commands in are pinned inside a workspace,
//     and a workspace reached through a symlink inside one is refused. Not
//     built remotely: the start gate, the IPC guard, the check that a
//     workspace is still the directory it was. A signal death inside the
//     sandbox reads as exit status 128+n.
//   - A process that leaves the group (setsid) escapes the kill, as with the
//     plain local spawner.
//   - sshd's MaxSessions (10 by default, one of them the supervisor) caps
//     the commands running at once over the one connection, a spilling
//     command taking two; the next one fails with an error saying so.
//   - The pid check needs /proc on the host; without it a signal after the
//     leader exited could in theory reach a group that took its pid.
//   - The host needs bash 4.1 or newer on PATH (macOS's /bin/bash 3.2 is
//     too old), GNU-style `head -c` for Spec.Stdin, and sleep(1) accepting
//     fractions. A host whose sshd does not make each session's shell a
//     process group leader is refused (checked in /proc where it exists).
//   - Commands run in the login shell's bash (as `ssh host cmd` does): the
//     functions and unexported variables a remote ~/.bashrc defines for
//     non-interactive ssh sessions are visible to them.
//   - Spill writes travel over the same connection: a command that prints
//     faster than the host can store its spill is slowed to that rate.
//   - The daemon's death (SIGKILL) drops the connection: the groups die as
//     on any connection loss. A remote `kill -9` of the supervisor's shell
//     (or of all the user's processes) leaves groups unattended.
package ssh
