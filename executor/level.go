package executor

import "fmt"

// Level is how far a command is confined. The zero value means "the
// executor's default" in a Request; Resolve replaces it with a real level.
type Level string

const (
	// LevelOff runs the command unconfined, with the daemon user's authority.
	LevelOff Level = "off"
	// LevelReadOnly shows the filesystem read-only (the session cwd
	// included): only throwaway space (a private /tmp, cache directories)
	// is writable, and there is no network.
	LevelReadOnly Level = "read-only"
	// LevelWorkspace is LevelReadOnly with the workspace (the session cwd
	// and its subtree) writable.
	LevelWorkspace Level = "workspace"
	// LevelWorkspaceNetwork is LevelWorkspace with the network.
	LevelWorkspaceNetwork Level = "workspace-network"
)

// AllLevels lists every level, from the most confined to off.
func AllLevels() []Level {
	return []Level{LevelReadOnly, LevelWorkspace, LevelWorkspaceNetwork, LevelOff}
}

// Valid reports whether l is one of the four levels (the empty Level is not).
func (l Level) Valid() bool {
	switch l {
	case LevelOff, LevelReadOnly, LevelWorkspace, LevelWorkspaceNetwork:
		return true
	}
	return false
}

// Confined reports whether l runs commands inside a sandbox.
func (l Level) Confined() bool { return l.Valid() && l != LevelOff }

// Writable reports whether l lets a command write into its workspace.
func (l Level) Writable() bool {
	return l == LevelOff || l == LevelWorkspace || l == LevelWorkspaceNetwork
}

// Network reports whether l lets a command reach the network.
func (l Level) Network() bool { return l == LevelOff || l == LevelWorkspaceNetwork }

// ParseLevel returns the level named s, or an error listing the valid names.
func ParseLevel(s string) (Level, error) {
	if l := Level(s); l.Valid() {
		return l, nil
	}
	return "", fmt.Errorf("unknown sandbox level %q (want off, read-only, workspace or workspace-network)", s)
}

// Confiner is implemented by executors that know about sandbox levels
// (every executor built on executor/engine does). The layers above use it to
// offer the levels, pick a default and tell the user why commands run
// unconfined. All methods are cheap and never block.
type Confiner interface {
	// Levels lists the levels Run and Start accept now, LevelOff included.
	Levels() []Level
	// DefaultLevel is the level of a request that names none.
	DefaultLevel() Level
	// Unavailable says why confined levels cannot be built here (no
	// sandbox in this executor, bubblewrap missing or refused by the
	// kernel); nil when they can. It wraps ErrSandbox.
	Unavailable() error
}
