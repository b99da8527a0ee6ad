package executor

import "context"

// Remote is implemented by executors whose commands run on another machine
// (executor/ssh). The layers above use it so that a session's directory is
// the one commands use there, is checked there rather than on this machine,
// and is shown and described with the machine's name. An executor without
// it runs commands here, in the session's own directory.
type Remote interface {
	// SessionDir maps a session's directory as the client (the editor)
	// names it to the directory its commands run in on the remote host. It
	// is pure and never blocks.
	SessionDir(clientDir string) string
	// CheckDir reports whether dir (absolute) is an existing directory on
	// the remote host: nil when it is; an error wrapping ErrWorkdir when it
	// is not; another error when the host could not be asked (unreachable,
	// its host key refused). It blocks for at most a connection attempt,
	// bounded by ctx.
	CheckDir(ctx context.Context, dir string) error
	// Location names dir on the remote host for display ("host:/path").
	Location(dir string) string
	// Describe says, for the model, where commands run ("on the remote
	// host build1, over SSH").
	Describe() string
}
