package local

// Default process limits.
const (
	DefaultPids      = 1024
	DefaultTotalPids = 4096
)

// Limits bounds the processes of commands where the daemon can make a pids
// cgroup (Linux only; Spawner.LimitsUnavailable says why not). Zero fields
// take the defaults; a negative field means no such limit.
type Limits struct {
	// Pids is the most processes and threads one command may have at once
	// (DefaultPids). A fork past it fails with EAGAIN, and the result says
	// LimitHit "pids".
	Pids int
	// TotalPids bounds all running commands together (DefaultTotalPids,
	// and at most half of the kernel's pid_max), so the daemon and the rest
	// of the machine keep a reserve however many commands run.
	TotalPids int
}
