package ssh

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/engine"
	"github.com/dsh-acp/dsh-acp/executor/sandbox"
)

// Spawner is the engine.Spawner that runs each command on the host, in a
// session channel of the daemon's one connection. It is safe for concurrent
// use. It implements engine.Spiller (spill files live on the host) and
// engine.Closer (Close ends the connection).
type Spawner struct {
	d      *dialer
	spills *spills
	box    remoteBox
	known  knownDirs
}

// knownDirs are the workspaces and additional directories of the
// confined commands run so far (the sessions' directories on the host),
// the most recent maxKnown.
type knownDirs struct {
	mu   sync.Mutex
	dirs []string
}

const maxKnown = 64

// note records spec's directories and returns the others known.
func (k *knownDirs) note(spec executor.Spec) []string {
	own := append([]string{path.Clean(spec.Workspace)}, remoteRoots(spec)...)
	k.mu.Lock()
	defer k.mu.Unlock()
	var others []string
	for _, d := range k.dirs {
		if !slices.Contains(own, d) {
			others = append(others, d)
		}
	}
	k.dirs = append(others, own...)
	if n := len(k.dirs); n > maxKnown {
		k.dirs = k.dirs[n-maxKnown:]
	}
	return others
}

var (
	_ engine.Spawner = (*Spawner)(nil)
	_ engine.Spiller = (*Spawner)(nil)
	_ engine.Closer  = (*Spawner)(nil)
	_ engine.Leveler = (*Spawner)(nil)
)

// Spawn implements engine.Spawner: LevelOff runs the command as it is, a
// confined level inside the host's bubblewrap (sandbox.RemoteWrapper), or
// not at all where the host cannot build it (an error wrapping
// executor.ErrSandbox that says why). It connects first when there is no
// connection (the first command, or the first after the connection was
// lost); a host that cannot be reached, or whose key is refused
// (*HostKeyError), is an error and nothing runs.
func (s *Spawner) Spawn(cmd engine.Command) (engine.Process, error) {
	spec := cmd.Spec
	confined := spec.Level != executor.LevelOff && spec.Level != ""
	if confined {
		if !spec.Level.Confined() {
			_, err := executor.ParseLevel(string(spec.Level))
			return nil, fmt.Errorf("%w: %w", executor.ErrSandbox, err)
		}
		if err := s.box.check(s); err != nil {
			return nil, err
		}
		if !path.IsAbs(spec.Workspace) {
			return nil, fmt.Errorf("%w %q: the workspace is not an absolute path", executor.ErrWorkdir, spec.Workspace)
		}
	}
	if !path.IsAbs(spec.Workdir) {
		return nil, fmt.Errorf("%w %q: not an absolute path", executor.ErrWorkdir, spec.Workdir)
	}
	if strings.ContainsRune(spec.Command, 0) {
		return nil, errors.New("the command contains a NUL byte")
	}
	for _, kv := range cmd.Env {
		if name, _, _ := strings.Cut(kv, "="); !isName(name) {
			return nil, fmt.Errorf("environment variable %q cannot be passed to the remote bash", name)
		}
	}
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), s.d.timing.dial)
		c, err := s.d.get(ctx)
		cancel()
		if err != nil {
			return nil, err
		}
		var wrapper string
		if confined {
			if wrapper, err = remoteWrapper(spec, c.spillDir, s.known.note(spec)); err != nil {
				return nil, err
			}
		}
		p, err := c.start(&launch{
			marker:   newMarker(),
			script:   spec.Command,
			stdin:    spec.Stdin,
			dir:      spec.Workdir,
			unset:    c.unset,
			envUnset: c.envUnset,
			export:   cmd.Env,
			private:  len(spec.Env) > 0,
			registry: c.sup.reg,
			sandbox:  wrapper,
		})
		if errors.Is(err, errStale) && attempt == 0 {
			continue // the connection had just died: dial again once
		}
		if err != nil {
			return nil, err
		}
		return p, nil
	}
}

// Spills implements engine.Spiller.
func (s *Spawner) Spills() engine.SpillStore { return s.spills }

// Close ends the connection; later spawns fail with ErrClosed.
func (s *Spawner) Close() error {
	s.d.close()
	return nil
}

// checkDir reports whether dir is a directory on the host.
func (s *Spawner) checkDir(ctx context.Context, dir string) error {
	if !path.IsAbs(dir) {
		return fmt.Errorf("%w %q: not an absolute path", executor.ErrWorkdir, dir)
	}
	c, err := s.d.get(ctx)
	if err != nil {
		return err
	}
	q := sandbox.Quote(dir)
	out, _, err := c.run(ctx, fmt.Sprintf("unset -v n p; cd -- %s 2>/dev/null && echo ok || { [ -e %s ] && { [ -d %s ] && echo EACCES || echo ENOTDIR; } || echo ENOENT; }", q, q, q), nil, 4096)
	if err != nil {
		return err
	}
	var errno error
	switch strings.TrimSpace(lastLine(string(out))) {
	case "ok":
		return nil
	case "ENOTDIR":
		errno = syscall.ENOTDIR
	case "EACCES":
		errno = syscall.EACCES
	default:
		errno = syscall.ENOENT
	}
	return fmt.Errorf("%w %q on %s: %w", executor.ErrWorkdir, dir, s.d.target.Host, errno)
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// remoteWrapper is the sandbox wrapper for spec on a host whose spill
// directory is spillDir ("" when the hello could not make one): the state
// directory above it is hidden and holds the placeholder registry, the
// session's spill directory is shown read-only; others are the other known
// sessions' directories (pinned, and not to be reached through). A writable
// level without a state directory is refused.
func remoteWrapper(spec executor.Spec, spillDir string, others []string) (string, error) {
	if spillDir == "" && spec.Level.Writable() {
		return "", fmt.Errorf("%w: the host has no usable state directory for the sandbox's placeholder registry (see the daemon's log)", executor.ErrSandbox)
	}
	rs := sandbox.RemoteSpec{Level: spec.Level, Workspace: spec.Workspace, Roots: remoteRoots(spec), ScriptVar: "__dsh_s", Pre: "__dsh_pre",
		AllowNewRepository: spec.AllowNewRepository, Others: others}
	if spillDir != "" {
		rs.StateDir = path.Dir(spillDir)
		rs.SpillDir = spillDir + "/" + ownerDirName(spec.Owner)
	}
	return sandbox.RemoteWrapper(rs), nil
}

// remoteRoots are spec's additional directories as the host's sandbox
// binds them: absolute, clean, without the workspace or a repeat (with an
// address path every client directory maps to that one).
func remoteRoots(spec executor.Spec) []string {
	var out []string
	for _, r := range spec.Roots {
		r = path.Clean(r)
		if path.IsAbs(r) && r != path.Clean(spec.Workspace) && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}
