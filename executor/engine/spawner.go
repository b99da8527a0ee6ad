package engine

import (
	"io"
	"syscall"

	"github.com/dsh-acp/dsh-acp/executor"
)

// Spawner starts commands for an Engine. It is the only part an executor
// must write: the engine does everything else (tasks, ownership, output,
// spill files, timeouts, the kill path). Spawn may be called concurrently.
type Spawner interface {
	// Spawn starts cmd.Spec.Command as `bash -c` in cmd.Spec.Workdir with
	// exactly cmd.Env, stdin fed from cmd.Spec.Stdin (else empty, never the
	// daemon's), in a process group of its own (or what stands for one: a
	// sandbox, a remote session) that Process.Signal reaches as a whole. It
	// returns once the process exists. A missing workdir is an error
	// wrapping executor.ErrWorkdir; a level the spawner cannot build, one
	// wrapping executor.ErrSandbox. No process survives a failed Spawn.
	Spawn(cmd Command) (Process, error)
}

// Command is what the engine asks a Spawner to start.
type Command struct {
	// Spec is the resolved call; Spec.Level is never empty.
	Spec executor.Spec
	// Env is the complete environment, "NAME=value" entries, one per name
	// (the engine keeps the last of each); a Spawner passes it as it is.
	Env []string
	// SpillDir, set for confined levels only, is the existing directory
	// the owner's spill files go to (a sandbox shows it read-only so the
	// command can read the complete output of earlier calls).
	SpillDir string
}

// Process is one spawned command as the engine drives it. The engine calls
// Stdout and Stderr once each and reads them to EOF, calls Wait once, may
// call Signal at any time from any goroutine until it calls Release, and
// calls Release exactly once, after Wait returned and after its last Signal.
type Process interface {
	// Stdout and Stderr are the command's output streams. Close unblocks a
	// pending Read (the engine closes them when something outside the
	// group keeps the pipe open).
	Stdout() io.ReadCloser
	Stderr() io.ReadCloser
	// Wait blocks until the command's leader has exited. It must not
	// release the leader: until Release, Signal still reaches the group and
	// never a recycled one (locally: waitid(WNOWAIT) keeps the leader an
	// unreaped zombie).
	Wait()
	// Signal sends sig (SIGTERM or SIGKILL) to the whole group. A group
	// that is already gone is not an error. It never blocks for long.
	Signal(sig syscall.Signal) error
	// Release frees the leader and everything the process holds, and
	// returns how it ended. No Signal reaches anything afterwards.
	Release() Exit
	// ID names the process in logs (e.g. "pid 1234").
	ID() string
}

// Exit is how a command ended.
type Exit struct {
	// Code is the exit status, -1 when a signal ended the command.
	Code int
	// Signal names the terminating signal ("SIGKILL"), or "".
	Signal string
	// LimitHit names a process limit the command ran into ("pids"), or "".
	LimitHit string
	// Err, when set, says the command's fate is unknown because the
	// infrastructure failed under it (the connection to a remote host was
	// lost): Run returns it as an error, and a background task ends Killed
	// with a last line of output, "dsh-acp: " and the error.
	// Code and Signal are then meaningless.
	Err error
}

// Leveler is implemented by spawners that confine commands. A spawner
// without it runs LevelOff only.
type Leveler interface {
	// Levels lists the levels Spawn accepts now (LevelOff included).
	Levels() []executor.Level
	// DefaultLevel is the level for a request that names none.
	DefaultLevel() executor.Level
	// Unavailable says why confined levels cannot be built (wrapping
	// executor.ErrSandbox), or nil.
	Unavailable() error
}

// Spiller is implemented by spawners whose commands do not see this
// machine's disk (a remote host): the engine then creates spill files
// through Spills instead of under <StateDir>/spill, so the path it gives the
// model names a file the model's next command can read.
type Spiller interface {
	Spills() SpillStore
}

// SpillStore creates spill files. It is safe for concurrent use.
type SpillStore interface {
	// Create makes a new, empty file for owner's output, named after base
	// ("bash-3", "run-7"), that only the daemon's user can read, in a 0700
	// directory of the owner's, and returns it with its absolute path as
	// commands see it. No file is left behind when it fails.
	Create(owner, base string) (SpillFile, string, error)
}

// SpillFile is an open spill file. The engine calls Write with its capture
// lock held, so a Write must not block for long; a failed Write makes the
// file incomplete (the engine then removes it). Close reports whether
// everything written is in the file; Remove deletes it, after Close or
// instead of it.
type SpillFile interface {
	io.Writer
	Close() error
	Remove() error
}

// Closer is implemented by spawners holding resources (a spawn thread, a
// cgroup); Engine.Shutdown calls Close once every command is gone.
type Closer interface {
	Close() error
}
