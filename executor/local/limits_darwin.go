package local

import (
	"errors"
	"syscall"

	"go.uber.org/zap"
)

// errNoLimits is why no process limit applies on darwin. macOS has no
// cgroups, and RLIMIT_NPROC, its only process-count limit, is not used: it
// counts every process of the user, not of one command, so a limit low
// enough to stop a fork bomb would also fail the forks of a command started
// while the user already runs that many processes (an editor, a browser),
// and one high enough to be safe stops nothing (the kernel caps it at
// kern.maxprocperuid anyway).
var errNoLimits = errors.New("macOS has no pids cgroups, and RLIMIT_NPROC counts all of the user's processes, not a command's")

// limiter is empty on darwin: newLimiter always says why there is none,
// so the Spawner never holds one and its methods are never reached.
type limiter struct{}

// commandCgroup is empty on darwin (there are no cgroups).
type commandCgroup struct{}

func newLimiter(Limits, *zap.Logger) (*limiter, error)          { return nil, errNoLimits }
func (*limiter) take() (*commandCgroup, error)                  { return nil, errNoLimits }
func (*limiter) prepare()                                       {}
func (*limiter) takeIn(**commandCgroup) (*commandCgroup, error) { return nil, errNoLimits }
func (*limiter) prepareIn(**commandCgroup)                      {}
func (*limiter) dropIn(**commandCgroup)                         {}
func (*limiter) close()                                         {}
func (*commandCgroup) apply(*syscall.SysProcAttr)               {}
func (*commandCgroup) finish() bool                             { return false }
func (*commandCgroup) remove()                                  {}
