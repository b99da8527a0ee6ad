// Package executor is the seam between the model-facing bash tools and the
// processes they run. The tools layer calls only this package's interface, so a
// sandboxed or remote executor can replace the local one without the model
// seeing a difference.
//
// The life of a call: the caller builds a Request (from the model's named
// arguments plus the calling session's cwd and owner token), Resolve turns it
// into a Spec with explicit values, and the Spec is either Run in the
// foreground (bounded by its timeout) or Started in the background (a task,
// read incrementally with Read and stopped with Kill).
//
// Every Spec carries a sandbox Level. An executor that can confine commands
// implements Confiner so the layers above can offer and explain the levels;
// a level it cannot build is refused with an error wrapping ErrSandbox, never
// run unconfined.
//
// Executors are built from a Spawner under the shared task engine
// (executor/engine); executor/executortest holds the contracts every
// executor must pass and executor/executorfake an in-memory fake for the
// layers above.
package executor

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Executor runs shell commands for the tools layer. All methods are safe for
// concurrent use. Kill, Read and OwnerOf never wait behind a running command.
type Executor interface {
	// Resolve fills the request's defaults: an absolute Workdir (a relative
	// one is joined to SessionCwd; an empty one becomes SessionCwd, else the
	// executor's configured default, else the process cwd) and a Timeout
	// (the configured default when zero, clamped to the configured cap).
	// It does not check that the directory exists: Run and Start do.
	Resolve(req Request) (Spec, error)

	// Run executes spec in the foreground and returns when the command has
	// exited (or was killed) and its pipes are drained, against a short
	// deadline. A timeout, a cancelled ctx and Kill all stop the command
	// through the same path: TERM to its process group, a grace period, KILL.
	// A non-zero exit, a signal or a timeout is a normal Result; only
	// infrastructure failures (a missing workdir, a spawn error, the
	// connection to a remote host lost while the command ran) are errors.
	// observe, when non-nil, receives output chunks in arrival order; it is
	// called from one goroutine at a time, and a slow observer never slows
	// the command down (chunks it cannot keep up with are dropped and
	// counted in Chunk.Dropped).
	Run(ctx context.Context, spec Spec, observe func(Chunk)) (Result, error)

	// Start runs spec in the background and returns its task id ("bash-1",
	// "bash-2", …) at once. No timeout applies. The task is stamped with
	// spec.Owner for its whole life.
	Start(spec Spec) (TaskID string, err error)

	// Read returns the output the task produced since the previous Read of
	// it, and its status. It never blocks. It fails with ErrUnknownTask for
	// an unknown id and with an *OwnerError (errors.Is ErrNotOwner) when
	// caller may not access the task (see Accessible).
	Read(id, caller string) (ReadResult, error)

	// Kill stops a background task and waits (bounded by the grace period)
	// for it to die. Killing a finished task is a no-op reported in
	// KillResult.AlreadyFinished. Errors as for Read.
	Kill(ctx context.Context, id, caller string) (KillResult, error)

	// KillOwned kills every running task stamped with owner (the session
	// is going away) and waits for them to die, bounded by ctx.
	KillOwned(ctx context.Context, owner string)

	// OwnerOf reports the owner token stamped on a task at start; ok is
	// false for an unknown id.
	OwnerOf(id string) (owner string, ok bool)

	// OnTaskDone registers fn to be called once for each background task
	// that finishes (exits or is killed). fn runs on an executor goroutine
	// and must not block. The returned function unregisters it.
	OnTaskDone(fn func(TaskDone)) (unsubscribe func())

	// Shutdown kills every running command and task and waits for them,
	// bounded by ctx. After Shutdown, Run and Start fail with ErrClosed.
	Shutdown(ctx context.Context) error
}

// Request is a call as the tools layer builds it from named arguments.
type Request struct {
	Command string
	// Workdir as the model gave it: empty, absolute, or relative to SessionCwd.
	Workdir string
	// SessionCwd is the calling session's cwd; empty for non-session callers.
	SessionCwd string
	// Roots are the session's additional directories (absolute): writable
	// at workspace levels like SessionCwd (see Spec.Roots).
	Roots []string
	// Timeout as the model asked for it; zero means the configured default.
	Timeout time.Duration
	// Owner is the calling session's token; empty for non-session callers.
	Owner string
	// Level is the sandbox level asked for; empty means the executor's
	// configured default (see Confiner.DefaultLevel).
	Level Level
	// Stdin and Env are for internal callers (hooks); the bash tool never
	// sets them from model arguments.
	Stdin []byte
	Env   map[string]string
}

// Spec is a resolved Request: every field is explicit.
type Spec struct {
	Command string
	Workdir string        // absolute
	Timeout time.Duration // > 0; ignored by Start
	Owner   string
	// Level is the sandbox level the command runs at. Resolve always sets
	// it; an empty Level given to Run or Start means the default.
	Level Level
	// Workspace is the absolute directory whose subtree a workspace level
	// makes writable: the session cwd (Request.SessionCwd), else Workdir.
	Workspace string
	// Roots are more directories treated as Workspace is (a project of
	// several folders): writable at workspace levels, with the same
	// protected names inside each; visible read-only at read-only.
	Roots []string
	Stdin []byte
	Env   map[string]string
	// AllowNewRepository lets a confined command create a git repository
	// at the workspace root where there is none (the user approved a `git
	// init`; see permission.Verdict.CreatesRepository). Otherwise the
	// sandbox keeps the name .git from being created there.
	AllowNewRepository bool
}

// Stream names where a chunk of output came from.
type Stream uint8

const (
	Stdout Stream = iota + 1
	Stderr
)

// Chunk is a piece of live output. Data is only valid during the observe
// call. Dropped counts bytes the observer missed just before this chunk
// because it was too slow.
type Chunk struct {
	Stream  Stream
	Data    []byte
	Dropped int64
}

// Result is the outcome of a foreground run.
type Result struct {
	// Stdout and Stderr are the tails of each stream (bounded by the
	// executor's capture size), for the model.
	Stdout, Stderr []byte
	// Combined is the tail of both streams interleaved in arrival order.
	// It may share its memory with Stdout or Stderr (when one stream
	// alone printed): treat all three as read-only.
	Combined []byte
	// ExitCode is the process's exit status; -1 when it died of a signal.
	ExitCode int
	// Signal is the terminating signal's name ("SIGKILL"), or "".
	Signal string
	// TimedOut is true whenever the executor's timer fired, however the
	// process ended afterwards.
	TimedOut bool
	// Dropped counts bytes produced but not kept in Stdout/Stderr/Combined.
	Dropped int64
	// LimitHit names a process limit the command ran into ("pids": it
	// tried to create more processes than its limit allows), or "". The
	// command kept running (forks failed with EAGAIN); the tool layer may
	// print it as a marker.
	LimitHit string
	// SpillPath names a file holding the complete output (both streams,
	// interleaved) when one exists and is complete; "" otherwise. An
	// executor spills at least whenever it dropped output, and may spill
	// earlier (so a caller that cuts the text further can name the file).
	SpillPath string
	// SpillError says why the complete output could not be saved ("no
	// space left on device") when the executor meant to spill it and a
	// file could not be created or written; SpillPath is "" then. It is ""
	// when nothing failed (a spill past the size cap is not a failure).
	SpillError string
	Duration   time.Duration
}

// Truncated reports whether output was dropped from the in-memory capture.
func (r Result) Truncated() bool { return r.Dropped > 0 }

// TaskStatus is the state of a background task.
type TaskStatus uint8

const (
	Running TaskStatus = iota + 1
	Completed
	Killed
)

func (s TaskStatus) String() string {
	switch s {
	case Running:
		return "running"
	case Completed:
		return "completed"
	case Killed:
		return "killed"
	}
	return fmt.Sprintf("TaskStatus(%d)", uint8(s))
}

// ReadResult is what one Read returns.
type ReadResult struct {
	ID     string
	Output []byte // both streams interleaved, produced since the previous Read
	Status TaskStatus
	// ExitCode and Signal are set once Status is not Running.
	ExitCode int
	Signal   string
	// Lost counts bytes produced since the previous Read that are no longer
	// in memory (the buffer bound dropped them).
	Lost int64
	// SpillPath names the complete output file when one is safely
	// available (always, while it stays complete, once the output outgrew
	// the executor's spill threshold); "" means unavailable.
	SpillPath string
	// SpillError is as for Result: why the complete output could not be
	// saved, or "".
	SpillError string
	// LimitHit is as for Result, set once Status is not Running.
	LimitHit string
}

// KillResult is what Kill returns.
type KillResult struct {
	ID              string
	AlreadyFinished bool
	Status          TaskStatus // after the kill
	ExitCode        int
	Signal          string
}

// TaskDone tells subscribers that a background task finished.
type TaskDone struct {
	ID       string
	Owner    string
	Command  string
	Status   TaskStatus // Completed or Killed
	ExitCode int
	Signal   string
}

var (
	// ErrUnknownTask is returned for a task id the executor never issued.
	ErrUnknownTask = errors.New("unknown task")
	// ErrNotOwner is matched (errors.Is) by *OwnerError.
	ErrNotOwner = errors.New("task belongs to another session")
	// ErrWorkdir is wrapped when the working directory is missing or not a directory.
	ErrWorkdir = errors.New("invalid working directory")
	// ErrClosed is returned after Shutdown.
	ErrClosed = errors.New("executor is shut down")
	// ErrSandbox is wrapped when a command cannot run at its sandbox level
	// (no sandbox here, bubblewrap missing or refused, an unknown level).
	// The command did not run; the error text says why.
	ErrSandbox = errors.New("sandbox unavailable")
)

// OwnerError is the error for a task the caller may not access. Its text is
// exactly "task <id> belongs to another session".
type OwnerError struct{ ID string }

func (e *OwnerError) Error() string        { return "task " + e.ID + " belongs to another session" }
func (e *OwnerError) Is(target error) bool { return target == ErrNotOwner }

// UnknownTaskError names the id that was not found; errors.Is ErrUnknownTask.
type UnknownTaskError struct{ ID string }

func (e *UnknownTaskError) Error() string        { return "unknown task " + e.ID }
func (e *UnknownTaskError) Is(target error) bool { return target == ErrUnknownTask }

// Accessible reports whether caller may read or kill a task stamped with
// owner: a task with no owner is open to anyone; an owned task only to the
// same token (an empty caller cannot access an owned task).
func Accessible(owner, caller string) bool { return owner == "" || owner == caller }
