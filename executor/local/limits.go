package local

// Default process limits.
const (
	DefaultPids      = 1024
	DefaultTotalPids = 4096
)

// Limits bounds the processes of commands where the daemon can make a pids
// cgroup (Linux only; Spawner.LimitsUnavailable says why not). Zero fields take the defaults;
// a negative field means no such limit.
//
// Below a shared pids budget (a pids.max on the daemon's cgroup or one
// above it: a container, a systemd unit's TasksMax) the daemon keeps a
// reserve for itself: at start it reads the least free room of those
// cgroups, keeps a quarter of it (at least 64 tasks, at most half), and
// gives all commands together at most the rest, whatever TotalPids says;
// one command then gets at most half of what all commands get.
type Limits struct {
	// Pids is the most processes and threads one command may have at once
	// (DefaultPids, and at most half of the commands' total). A fork past
	// it fails with EAGAIN, and the result says LimitHit "pids".
	Pids int
	// TotalPids bounds all running commands together (DefaultTotalPids,
	// at most half of the kernel's pid_max, and at most the shared budget
	// minus the daemon's reserve), so the daemon and the rest of the
	// machine keep a reserve however many commands run.
	TotalPids int
}
