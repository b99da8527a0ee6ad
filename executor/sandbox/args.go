package sandbox

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dsh-acp/dsh-acp/executor"
)

// plan is everything one bwrap command line is built from. Every path is
// absolute and, except Workdir, free of symlinks; paths that do not exist
// on the host are left out before the plan is built.
type plan struct {
	Level     executor.Level
	Workspace string   // writable at workspace levels, visible read-only at read-only
	Roots     []string // more workspaces (Spec.Roots), bound as Workspace is
	Workdir   string
	Home      string   // shown read-only
	Scratch   []string // throwaway writable directories (tmpfs), e.g. ~/.cache
	Hidden    []hidden // shown empty
	Protected []string // read-only even inside the workspace (entries and placeholders)
	// Pins are directories inside the workspace bound onto themselves,
	// shallowest first: writable still, but a mount point cannot be
	// renamed or removed (see protect.go).
	Pins []string
	// Placeholders were made on the host for this command (see
	// placeholders); not a mount of their own (they are in Protected).
	Placeholders []string
	StateDir     string // hidden, except SpillDir
	SpillDir     string // shown read-only
	Resolv       string // a resolv.conf target under /run, re-shown at network levels
	InfoFD       int
	// GateFD is bwrap's --seccomp: the start gate (gate_linux.go); 0
	// means none.
	GateFD int
	Argv   []string // the command inside: bash and its arguments
}

// hidden is a credential path and whether it is a directory.
type hidden struct {
	Path string
	Dir  bool
}

// args returns bwrap's arguments (without argv[0]) for p. The order
// matters: later mounts cover earlier ones, so the workspace comes after
// the throwaway /tmp (a workspace under /tmp stays visible), the pins come
// after the workspace, the protected paths after the pins and the hidden
// ones last (a workspace holding ~/.ssh or .git/hooks does not show or
// free them, and a protected directory does not re-show a hidden file in
// it).
func args(p plan) []string {
	a := []string{
		// The kernel ends every process of the sandbox when its pid 1
		// (bwrap's init) dies; --die-with-parent ties bwrap to the daemon.
		"--die-with-parent",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		// A user namespace even for root: the command keeps no capability
		// over the host (it cannot remount / writable) and may not make
		// further user namespaces.
		"--unshare-user", "--disable-userns", "--cap-drop", "ALL",
	}
	if !p.Level.Network() {
		a = append(a, "--unshare-net")
	}
	a = append(a,
		"--ro-bind", "/", "/",
		"--dev", "/dev",
		"--proc", "/proc",
		"--tmpfs", "/tmp",
		"--tmpfs", "/run",
	)
	if p.Level.Network() && p.Resolv != "" {
		a = append(a, "--ro-bind", p.Resolv, p.Resolv)
	}
	// The home is shown read-only by the bind of / already; it needs a
	// mount of its own only below a base mount that covers the host's
	// tree (a bind costs bubblewrap a reparse of its mount table, ~0.1 ms).
	if p.Home != "" && underBaseMount(p.Home) {
		a = append(a, "--ro-bind", p.Home, p.Home)
	}
	for _, d := range p.Scratch {
		a = append(a, "--tmpfs", d)
	}
	if p.Level.Writable() {
		a = append(a, "--bind", p.Workspace, p.Workspace)
	} else {
		a = append(a, "--ro-bind", p.Workspace, p.Workspace)
	}
	for _, r := range p.Roots {
		if p.Level.Writable() {
			a = append(a, "--bind", r, r)
		} else {
			a = append(a, "--ro-bind", r, r)
		}
	}
	if p.Workspace == "/" {
		// Binding / again re-showed the host's /dev, /proc, /tmp and /run.
		a = append(a, "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/run")
	}
	// Pins before what they hold: a later bind of a parent would cover
	// the mounts below it.
	for _, d := range p.Pins {
		a = append(a, "--bind", d, d)
	}
	// Protected before hidden: a read-only bind of a protected directory
	// (~/.config/git) re-shows the host's tree below it, hidden files
	// (~/.config/git/credentials) included, so hiding comes after.
	for _, path := range p.Protected {
		a = append(a, "--ro-bind", path, path)
	}
	for _, h := range p.Hidden {
		if h.Dir {
			a = append(a, "--tmpfs", h.Path, "--remount-ro", h.Path)
		} else {
			a = append(a, "--ro-bind", "/dev/null", h.Path)
		}
	}
	if p.StateDir != "" {
		a = append(a, "--tmpfs", p.StateDir)
		if p.SpillDir != "" {
			a = append(a, "--ro-bind", p.SpillDir, p.SpillDir)
		}
		a = append(a, "--remount-ro", p.StateDir)
	}
	a = append(a,
		"--chdir", p.Workdir,
		"--info-fd", strconv.Itoa(p.InfoFD),
	)
	if p.GateFD > 0 {
		a = append(a, "--seccomp", strconv.Itoa(p.GateFD))
	}
	a = append(a, "--")
	return append(a, p.Argv...)
}

// underBaseMount reports whether path lies below one of the base mounts
// that replace the host's tree (/dev, /proc, /tmp, /run).
func underBaseMount(path string) bool {
	for _, d := range []string{"/dev", "/proc", "/tmp", "/run"} {
		if within(path, d) {
			return true
		}
	}
	return false
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	if dir == "/" {
		return true
	}
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}
