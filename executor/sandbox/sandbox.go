package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/engine"
	"github.com/dsh-acp/dsh-acp/executor/local"
	"github.com/dsh-acp/dsh-acp/executor/sandbox/ipcguard"
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
	// DefaultHidden(Home). The state directory is hidden
	// in any case, except the calling session's spill directory.
	Hidden []string
	// Scratch are directories that become empty, writable and thrown away
	// with the command (caches); nil means DefaultScratch(Home). /tmp is
	// always scratch.
	Scratch []string
	// Protected are paths relative to the workspace kept read-only even at
	// the workspace levels; nil means DefaultProtected.
	Protected []string
}

// DefaultHidden lists the credential paths hidden under home: ~/.ssh,
// ~/.aws, ~/.gnupg, ~/.config/gh, ~/.config/gcloud, ~/.netrc,
// ~/.git-credentials, ~/.docker, ~/.kube, ~/.npmrc and ~/.pypirc.
func DefaultHidden(home string) []string {
	names := []string{".ssh", ".aws", ".gnupg", ".config/gh", ".config/gcloud", ".netrc",
		".git-credentials", ".docker", ".kube", ".npmrc", ".pypirc"}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = filepath.Join(home, n)
	}
	return out
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

// DefaultProtected lists what stays read-only inside a writable workspace:
// git's hooks and config (a planted hook or core.fsmonitor would run later,
// outside the sandbox) and the daemon's own rule directory.
var DefaultProtected = []string{".git/hooks", ".git/config", ".dsh-acp"}

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
	guard     *ipcguard.Guard // the IPC guard of the levels without network (ipcguard.go)
	bwrap     string
	level     executor.Level // the default
	home      string         // resolved; "" when there is none
	setHome   bool
	hidden    []string
	scratch   []string
	protected []string
	stateDir  string
	root      bool
	why       error // nil when bubblewrap works here
	log       *zap.Logger
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
	guard := newGuard(log)
	plain, err := local.NewSpawner(local.SpawnerConfig{Limits: cfg.Limits, Logger: log, Guard: guard.Install})
	if err != nil {
		return nil, err
	}
	s := &Spawner{plain: plain, guard: guard, level: cfg.Level, log: log, root: os.Geteuid() == 0, protected: cfg.Protected}
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
		s.why = s.detect(s.detectArg)
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
	if s.guard != nil {
		s.guard.Close()
	}
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

// plan resolves the paths of one sandbox.
func (s *Spawner) plan(spec executor.Spec, spillDir string, infoFD int, argv []string) (plan, error) {
	if !filepath.IsAbs(spec.Workspace) {
		return plan{}, fmt.Errorf("%w %q: the workspace is not an absolute path", executor.ErrWorkdir, spec.Workspace)
	}
	workspace, err := filepath.EvalSymlinks(spec.Workspace)
	if err != nil {
		return plan{}, fmt.Errorf("%w %q: %w", executor.ErrWorkdir, spec.Workspace, unwrapPath(err))
	}
	p := plan{Level: spec.Level, Workspace: workspace, Workdir: spec.Workdir, InfoFD: infoFD, Argv: argv}
	if home, ok := resolveExisting(s.home); ok {
		p.Home = home
	}
	for _, d := range s.scratch {
		if d, ok := resolveExisting(d); ok && isDir(d) {
			p.Scratch = append(p.Scratch, d)
		}
	}
	for _, h := range s.hidden {
		if h, ok := resolveExisting(h); ok && h != "/" {
			p.Hidden = append(p.Hidden, hidden{Path: h, Dir: isDir(h)})
		}
	}
	if spec.Level.Writable() {
		for _, rel := range s.protected {
			if path, ok := resolveExisting(filepath.Join(workspace, rel)); ok && within(path, workspace) {
				p.Protected = append(p.Protected, path)
			}
		}
	}
	if state, ok := resolveExisting(s.stateDir); ok && state != "/" {
		p.StateDir = state
		if spill, ok := resolveExisting(spillDir); ok && within(spill, state) {
			p.SpillDir = spill
		}
	}
	if spec.Level.Network() {
		if r, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && within(r, "/run") {
			p.Resolv = r
		}
	}
	return p, nil
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
