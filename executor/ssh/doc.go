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
// environment stays out of the host's process list. sshd makes the
// session's shell the leader of a new session and
// process group, without a terminal; the prelude forks a watcher into the
// group, changes to the working directory (a missing one is an error
// wrapping executor.ErrWorkdir and fs.ErrNotExist), points stdin at
// /dev/null (or a private temporary file holding Spec.Stdin, removed once
// open), exports the engine's environment, prints the group id and
// evaluates the command in place: the leader is the command's own shell,
// and the exit-status or exit-signal sshd reports is the command's.
// Completion is decided by that report, not by output, so `sleep 100 &
// echo hi` returns at once.
//
// Signals travel in band: Process.Signal writes "T" or "K" on the
// channel's stdin, and the watcher, a member of the group, sends TERM or
// KILL to the whole group. An SSH "signal" request would reach only the
// leader's group while the leader lives and not every server honours it;
// a `kill -PGID` over another channel could hit a recycled group. The
// watcher keeps the group id alive while it can signal it, and it is what
// ends a group whose channel closes: when the leader exits sshd closes the
// watcher's stdin, and when the connection drops so does the dying sshd,
// and the watcher sends TERM, waits 200 ms and sends KILL. A command in
// flight when the connection drops ends with a *LostError (errors.Is
// ErrConnectionLost): Run returns it as an error with the output so far,
// a background task ends Killed.
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
//   - Only LevelOff: the host's bubblewrap is not used, so a confined level
//     is refused with executor.ErrSandbox.
//   - A process that leaves the group (setsid) escapes the kill, as with the
//     plain local spawner.
//   - sshd's MaxSessions (10 by default) caps the commands running at once
//     over the one connection; the next one fails with an error saying so.
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
//     on any connection loss, but nothing reports it.
package ssh
