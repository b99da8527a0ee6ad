package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/engine"
	"github.com/dsh-acp/dsh-acp/executor/local"
)

// Config configures New: the local executor's settings plus the sandbox's.
type Config struct {
	local.Config

	// Level is the default level of a request that names none. Empty means
	// LevelWorkspace where bubblewrap can start here and LevelOff
	// elsewhere. A level set here is explicit: where the sandbox cannot be
	// built, every command that does not name LevelOff itself is refused
	// with an error wrapping executor.ErrSandbox.
	Level executor.Level
	// Bwrap is the bubblewrap binary; empty means "bwrap" on PATH.
	Bwrap string
	// Home is the home directory the sandbox shows read-only and whose
	// credential paths it hides; empty means $HOME. When set, commands get
	// HOME=Home.
	Home string
	// Hidden are the paths hidden: a directory shows empty and read-only,
	// a file cannot be opened (it is /dev/null on a nodev mount); nil means
	// DefaultHidden(Home) (the Credentials table). The state directory and
	// dsh-acp's config directory (ConfigDir) are hidden in any case, except
	// the calling session's spill directory.
	Hidden []string
	// Scratch are directories that become empty, writable and thrown away
	// with the command (caches); nil means DefaultScratch(Home). /tmp is
	// always scratch.
	Scratch []string
	// Protected are paths relative to the workspace kept read-only even at
	// the workspace levels, and kept from being created when absent (see
	// protect.go); nil means DefaultProtected. ".git" stands for the
	// program-naming entries of the repository's git directory (and of
	// every repository nested in the workspace). HomeProtected applies in
	// addition when the home is inside the workspace.
	Protected []string
}

// DefaultScratch lists the throwaway cache directories: ~/.cache (which
// holds the Go build cache by default) and $GOCACHE when it is set
// elsewhere.
func DefaultScratch(home string) []string {
	out := []string{filepath.Join(home, ".cache")}
	if g := os.Getenv("GOCACHE"); filepath.IsAbs(g) && !within(g, out[0]) {
		out = append(out, g)
	}
	return out
}

// Executor is the sandboxed executor: the task engine on a Spawner.
type Executor = engine.Engine

// New returns the task engine on a sandboxing Spawner (which probes
// bubblewrap once, on first use). It fails only as local.New does (no bash, an unsafe state
// directory) or for an invalid Level; an unusable bubblewrap is recorded
// (see Spawner.Unavailable), never an error here.
func New(cfg Config) (*Executor, error) {
	sp, err := NewSpawner(cfg)
	if err != nil {
		return nil, err
	}
	ecfg := cfg.Config.Engine()
	ecfg.StateDir = sp.stateDir
	e, err := engine.New(sp, ecfg)
	if err != nil {
		sp.Close()
		return nil, fmt.Errorf("sandbox executor: %w", err)
	}
	return e, nil
}

// Spawner runs commands inside bubblewrap at the confined levels and plainly
// at LevelOff. It implements engine.Spawner, engine.Leveler and
// engine.Closer.
type Spawner struct {
	plain     *local.Spawner
	guards    guards // the IPC guards of the confined levels (ipcguard.go)
	bwrap     string
	level     executor.Level // the default
	home      string         // resolved; "" when there is none
	setHome   bool
	hidden    []string
	scratch   []string
	protected []string
	stateDir  string
	root      bool
	// unshare is util-linux unshare(1), the launcher of a non-dumpable
	// non-root daemon's bwrap ("" with unshareWhy when not found).
	unshare    string
	unshareWhy error
	why        error // nil when bubblewrap works here
	log        *zap.Logger
	configDir  string // dsh-acp's config directory, hidden at every level
	places     placeholders
	// mu guards workspaces and seenHidden.
	mu sync.Mutex
	// workspaces are the workspaces commands ran in (as given), with the
	// directory each was then: one that since resolves elsewhere, or is
	// another directory, is refused; and other commands' sandboxes pin
	// them, so they cannot be renamed or replaced while known.
	workspaces map[string]wsID
	// seenHidden are the hidden paths as resolved before: hidden still,
	// even after a symlink leading to one was changed.
	seenHidden map[string]bool
	// nestedCache is the last search for nested repositories per
	// workspace (see nested).
	nestedCache map[string]nestedFound
	// probe answers once, on first use (see probed): bwrap, why and,
	// when no level was asked for, level are set by it and read after it.
	probeOnce sync.Once
	detectArg string
	explicit  bool // a level was asked for: level needs no probe
}

var (
	_ engine.Spawner = (*Spawner)(nil)
	_ engine.Leveler = (*Spawner)(nil)
	_ engine.Closer  = (*Spawner)(nil)
)

// NewSpawner builds the Spawner for cfg. It probes bubblewrap on first use
// (the first session, not start-up: the daemon answers initialize
// without it): it runs `true` in a sandbox exactly as commands will run,
// once, and keeps the reason when that fails.
func NewSpawner(cfg Config) (*Spawner, error) {
	if cfg.Level != "" && !cfg.Level.Valid() {
		_, err := executor.ParseLevel(string(cfg.Level))
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	guards := newGuards(log)
	plain, err := local.NewSpawner(local.SpawnerConfig{Limits: cfg.Limits, Logger: log, Guards: guards.threads()})
	if err != nil {
		return nil, err
	}
	s := &Spawner{plain: plain, guards: guards, level: cfg.Level, log: log, root: os.Geteuid() == 0, protected: cfg.Protected}
	if s.protected == nil {
		s.protected = DefaultProtected
	}
	s.stateDir = cfg.StateDir
	if s.stateDir == "" {
		if s.stateDir, err = engine.DefaultStateDir(); err != nil {
			plain.Close()
			return nil, err
		}
	}
	if s.stateDir, err = filepath.Abs(s.stateDir); err != nil {
		plain.Close()
		return nil, fmt.Errorf("state dir: %w", err)
	}
	home := cfg.Home
	s.setHome = home != ""
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if home != "" {
		if home, err = filepath.Abs(home); err != nil {
			plain.Close()
			return nil, fmt.Errorf("home: %w", err)
		}
		s.home = home
	}
	s.hidden, s.scratch = cfg.Hidden, cfg.Scratch
	if s.hidden == nil && home != "" {
		s.hidden = DefaultHidden(home)
	}
	if home != "" {
		s.configDir = ConfigDir(home, os.Getenv)
	}
	s.workspaces, s.seenHidden, s.nestedCache = map[string]wsID{}, map[string]bool{}, map[string]nestedFound{}
	s.places.init(s.stateDir)
	if s.scratch == nil && home != "" {
		s.scratch = DefaultScratch(home)
	}
	s.detectArg, s.explicit = cfg.Bwrap, s.level != ""
	return s, nil
}

// probed runs the probe the first time it is called and returns once it
// answered.
func (s *Spawner) probed() {
	s.probeOnce.Do(func() {
		s.places.sweep() // a killed daemon's placeholders
		s.why = localReason(s.detect(s.detectArg))
		if !s.explicit {
			s.level = executor.LevelWorkspace
			if s.why != nil {
				s.level = executor.LevelOff
			}
		}
		switch {
		case s.why == nil:
			s.log.Info("sandbox", zap.String("level", string(s.level)), zap.Bool("explicit", s.explicit))
		case s.explicit && s.level.Confined():
			s.log.Warn("sandbox level asked for cannot be built: commands will be refused", zap.String("level", string(s.level)), zap.Error(s.why))
		default:
			s.log.Info("sandbox unavailable: commands run unconfined", zap.String("level", string(s.level)), zap.Error(s.why))
		}
	})
}

// Levels implements engine.Leveler.
func (s *Spawner) Levels() []executor.Level {
	s.probed()
	if s.why != nil {
		return []executor.Level{executor.LevelOff}
	}
	return executor.AllLevels()
}

// DefaultLevel implements engine.Leveler.
func (s *Spawner) DefaultLevel() executor.Level {
	if !s.explicit {
		s.probed()
	}
	return s.level
}

// Unavailable implements engine.Leveler: why bubblewrap cannot run here
// (wrapping executor.ErrSandbox), or nil.
func (s *Spawner) Unavailable() error {
	s.probed()
	return s.why
}

// Close implements engine.Closer.
func (s *Spawner) Close() error {
	s.probeOnce.Do(func() {}) // a probe under way ends first; none starts now
	err := s.plain.Close()
	s.guards.close()
	s.places.close()
	return err
}

// Spawn implements engine.Spawner: LevelOff runs plainly, every other level
// inside bubblewrap, or not at all (an error wrapping executor.ErrSandbox).
func (s *Spawner) Spawn(cmd engine.Command) (engine.Process, error) {
	level := cmd.Spec.Level
	if level == executor.LevelOff {
		if s.setHome {
			cmd.Env = setEnv(cmd.Env, "HOME", s.home)
		}
		return s.plain.Spawn(cmd)
	}
	if !level.Confined() {
		_, err := executor.ParseLevel(string(level))
		return nil, fmt.Errorf("%w: %w", executor.ErrSandbox, err)
	}
	s.probed()
	if s.why != nil {
		return nil, s.why
	}
	return s.spawn(cmd, cmd.SpillDir)
}

// plan resolves the paths of one sandbox. At a writable level it also
// makes the placeholders of absent protected names: the caller releases
// p.Placeholders (s.places.release) once the command ended, or at once if
// it never starts.
func (s *Spawner) plan(spec executor.Spec, spillDir string, infoFD int, argv []string) (plan, error) {
	if !filepath.IsAbs(spec.Workspace) {
		return plan{}, fmt.Errorf("%w %q: the workspace is not an absolute path", executor.ErrWorkdir, spec.Workspace)
	}
	workspace, err := filepath.EvalSymlinks(spec.Workspace)
	if err != nil {
		return plan{}, fmt.Errorf("%w %q: %w", executor.ErrWorkdir, spec.Workspace, unwrapPath(err))
	}
	others, err := s.checkWorkspace(spec.Workspace, workspace)
	if err != nil {
		return plan{}, err
	}
	p := plan{Level: spec.Level, Workspace: workspace, Workdir: spec.Workdir, InfoFD: infoFD, Argv: argv}
	if p.Roots, err = s.roots(spec.Roots, workspace); err != nil {
		return plan{}, err
	}
	if home, ok := resolveExisting(s.home); ok {
		p.Home = home
	}
	for _, d := range s.scratch {
		if d, ok := resolveExisting(d); ok && isDir(d) {
			p.Scratch = append(p.Scratch, d)
		}
	}
	p.Hidden = s.hiddenNow()
	if state, ok := resolveExisting(s.stateDir); ok && state != "/" {
		p.StateDir = state
		if spill, ok := resolveExisting(spillDir); ok && within(spill, state) {
			p.SpillDir = spill
		}
	}
	if spec.Level.Writable() {
		// What must not move inside the workspace: the hidden paths, the
		// state directory and the other sessions' workspaces.
		var extra []string
		for _, h := range p.Hidden {
			extra = append(extra, h.Path)
		}
		if p.StateDir != "" {
			extra = append(extra, p.StateDir)
		}
		prot := s.protect(workspace, extra, others, spec.AllowNewRepository)
		p.Protected, p.Pins, p.Placeholders = prot.ro, prot.pins, prot.placeholders
		for _, r := range p.Roots {
			prot := s.protect(r, extra, others, false)
			p.Protected = append(p.Protected, prot.ro...)
			p.Pins = append(p.Pins, prot.pins...)
			p.Placeholders = append(p.Placeholders, prot.placeholders...)
		}
	}
	if spec.Level.Network() {
		if r, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && within(r, "/run") {
			p.Resolv = r
		}
	}
	return p, nil
}

// wsID is the directory a workspace was when first used.
type wsID struct {
	resolved string
	dev, ino uint64
}

// checkWorkspace refuses a workspace (given, resolved) that is no longer
// the directory it was when first used, or whose path leads through a
// symlink inside another known workspace (a command there could have put
// it there); it records a new one. It returns the other known workspaces
// (resolved).
func (s *Spawner) checkWorkspace(given, resolved string) ([]string, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(resolved, &st); err != nil {
		return nil, fmt.Errorf("%w %q: %w", executor.ErrWorkdir, given, err)
	}
	id := wsID{resolved: resolved, dev: uint64(st.Dev), ino: st.Ino}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.workspaces[given]; ok && old != id {
		return nil, fmt.Errorf("%w %q: %w (was %s, now %s)", executor.ErrWorkdir, given, errReplaced, old.resolved, resolved)
	}
	var others []string
	for g, w := range s.workspaces {
		if g == given {
			continue
		}
		others = append(others, w.resolved)
		if link := symlinkWithin(given, w.resolved); link != "" {
			return nil, fmt.Errorf("%w %q: it leads through the symlink %s inside another session's workspace %s, which a command there could have made: refusing it",
				executor.ErrWorkdir, given, link, w.resolved)
		}
	}
	s.workspaces[given] = id
	return others, nil
}

// symlinkWithin returns the first component of path that is a symlink
// lying inside dir, or "".
func symlinkWithin(path, dir string) string {
	for p := filepath.Clean(path); p != "/" && p != "."; p = filepath.Dir(p) {
		if !within(p, dir) || p == dir {
			continue
		}
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return p
		}
	}
	return ""
}

// hiddenNow resolves the hidden paths (and dsh-acp's config directory,
// made if absent so that nothing can be planted where it will be): those
// that exist now, and those seen before that still do.
func (s *Spawner) hiddenNow() []hidden {
	paths := s.hidden
	if s.configDir != "" {
		if _, err := os.Lstat(s.configDir); errors.Is(err, os.ErrNotExist) {
			_ = os.MkdirAll(s.configDir, 0o700)
		}
		paths = append(slices.Clip(paths), s.configDir)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []hidden
	seen := map[string]bool{}
	add := func(h string) {
		if !seen[h] && h != "/" {
			seen[h] = true
			out = append(out, hidden{Path: h, Dir: isDir(h)})
		}
	}
	for _, h := range paths {
		if _, err := os.Lstat(h); err != nil {
			continue // most of the list is absent: one lstat each
		}
		if r, ok := resolveExisting(h); ok {
			s.seenHidden[r] = true
			add(r)
		}
	}
	for h := range s.seenHidden {
		if _, err := os.Lstat(h); err == nil {
			add(h)
		}
	}
	return out
}

// resolveExisting resolves symlinks in path; ok is false when it does not
// exist (or path is empty).
func resolveExisting(path string) (string, bool) {
	if path == "" {
		return "", false
	}
	r, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", false
	}
	return r, true
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// setEnv returns env with name set to value.
func setEnv(env []string, name, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return append(out, name+"="+value)
}

// roots resolves a spec's additional workspaces as the workspace is
// resolved and checked (checkWorkspace); one that is the workspace, or
// inside it or another root, adds nothing and is left out.
func (s *Spawner) roots(given []string, workspace string) ([]string, error) {
	var out []string
	for _, g := range given {
		if !filepath.IsAbs(g) {
			return nil, fmt.Errorf("%w %q: an additional directory is not an absolute path", executor.ErrWorkdir, g)
		}
		r, err := filepath.EvalSymlinks(g)
		if err != nil {
			return nil, fmt.Errorf("%w %q: %w", executor.ErrWorkdir, g, unwrapPath(err))
		}
		if _, err := s.checkWorkspace(g, r); err != nil {
			return nil, err
		}
		if within(r, workspace) || slices.ContainsFunc(out, func(o string) bool { return within(r, o) }) {
			continue
		}
		out = append(out, r)
	}
	return out, nil
}
