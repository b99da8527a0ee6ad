package local

import (
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor/engine"
)

// Executor is the local executor: the task engine on the plain spawner.
type Executor = engine.Engine

// Defaults applied by New to zero (or negative) Config fields.
const (
	DefaultTimeout      = engine.DefaultTimeout
	DefaultMaxTimeout   = engine.DefaultMaxTimeout
	DefaultGrace        = engine.DefaultGrace
	DefaultCaptureBytes = engine.DefaultCaptureBytes
	DefaultSpillCap     = engine.DefaultSpillCap
	DefaultSpillAfter   = engine.DefaultSpillAfter
	DefaultSpillMaxAge  = engine.DefaultSpillMaxAge
)

// Config configures New. The zero value is ready to use: every zero (or
// negative) field takes the default named in its comment.
type Config struct {
	// DefaultTimeout is a foreground command's timeout when the request
	// gives none (DefaultTimeout, 120 s). It is clamped to MaxTimeout.
	DefaultTimeout time.Duration
	// MaxTimeout caps a requested timeout (DefaultMaxTimeout, 600 s).
	MaxTimeout time.Duration
	// Grace is the time between TERM and KILL on every stop
	// (DefaultGrace, 2 s).
	Grace time.Duration
	// DefaultWorkdir is the working directory for requests with neither a
	// workdir nor a session cwd; empty means the process cwd at Resolve.
	DefaultWorkdir string
	// StateDir is the daemon's state directory; spill files live in
	// StateDir/spill. Empty means $XDG_STATE_HOME/dsh-acp, else
	// ~/.local/state/dsh-acp.
	StateDir string
	// CaptureBytes bounds each in-memory ring (DefaultCaptureBytes, 1 MiB).
	CaptureBytes int
	// SpillCap bounds one spill file (DefaultSpillCap, 64 MiB).
	SpillCap int64
	// SpillAfter is how much output a command may print before its
	// complete output also goes to a spill file (DefaultSpillAfter, 32 KiB).
	SpillAfter int
	// SpillMaxAge: New removes spill files older than this
	// (DefaultSpillMaxAge, 7 days).
	SpillMaxAge time.Duration
	// AllowEnv names variables let through the credential scrub
	// (e.g. GH_TOKEN for gh). See ScrubEnv. The values of those the scrub
	// would have dropped are redacted from output ("[redacted: GH_TOKEN]").
	AllowEnv []string
	// SecretValues are values no command may see (the daemon's API key): a
	// variable whose value contains one is dropped even if allowed, and
	// output that carries one shows "[redacted: API key]".
	SecretValues []string
	// Limits bounds each command's processes where the daemon can make a
	// pids cgroup (the zero value: the defaults).
	Limits Limits
	// Logger receives diagnostics (ids, pids, sizes; never output or
	// commands). Nil means no logging.
	Logger *zap.Logger
}

// APIKeyName names SecretValues in redacted output: "[redacted: API key]".
const APIKeyName = "API key"

// Engine returns the engine configuration for c: the same limits, the
// daemon's environment (snapshotted now) scrubbed of credentials as the
// base environment, and as secrets to redact from output the values only
// AllowEnv let through plus SecretValues.
func (c Config) Engine() engine.Config {
	env := os.Environ()
	redact := engine.AllowedSecrets(env, c.AllowEnv)
	for _, v := range c.SecretValues {
		redact = append(redact, engine.Secret{Name: APIKeyName, Value: v})
	}
	return engine.Config{
		DefaultTimeout: c.DefaultTimeout,
		MaxTimeout:     c.MaxTimeout,
		Grace:          c.Grace,
		DefaultWorkdir: c.DefaultWorkdir,
		StateDir:       c.StateDir,
		CaptureBytes:   c.CaptureBytes,
		SpillCap:       c.SpillCap,
		SpillAfter:     c.SpillAfter,
		SpillMaxAge:    c.SpillMaxAge,
		BaseEnv:        ScrubEnv(env, c.AllowEnv, c.SecretValues),
		Redact:         redact,
		Logger:         c.Logger,
	}
}

// New returns the local executor for cfg: the task engine on a plain
// Spawner. It snapshots and scrubs the process environment, creates or
// verifies <StateDir>/spill (an unsafe directory is logged and refused: see
// engine.New) and removes old spill files.
func New(cfg Config) (*Executor, error) {
	sp, err := NewSpawner(SpawnerConfig{Limits: cfg.Limits, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	e, err := engine.New(sp, cfg.Engine())
	if err != nil {
		sp.Close()
		return nil, fmt.Errorf("local executor: %w", err)
	}
	return e, nil
}

// ScrubEnv returns the entries of env that may be passed to a command; see
// engine.ScrubEnv.
func ScrubEnv(env, allow, secrets []string) []string { return engine.ScrubEnv(env, allow, secrets) }
