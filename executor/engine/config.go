package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"go.uber.org/zap"
)

// Defaults applied by New to zero (or negative) Config fields.
const (
	DefaultTimeout      = 120 * time.Second
	DefaultMaxTimeout   = 600 * time.Second
	DefaultGrace        = 2 * time.Second
	DefaultCaptureBytes = 1 << 20
	DefaultSpillCap     = 64 << 20
	DefaultSpillAfter   = 32 << 10
	DefaultSpillMaxAge  = 7 * 24 * time.Hour
)

// Config configures an Engine. The zero value is ready to use: every zero
// (or negative) field takes the default named in its comment.
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
	// CaptureBytes bounds each in-memory ring: a foreground command's
	// stdout, stderr and interleaved tails, and a background task's unread
	// output (DefaultCaptureBytes, 1 MiB).
	CaptureBytes int
	// SpillCap bounds one spill file; output past it makes the file
	// incomplete, so it is removed and not advertised
	// (DefaultSpillCap, 64 MiB).
	SpillCap int64
	// SpillAfter is how much output a command may print before its
	// complete output also goes to a spill file (DefaultSpillAfter, 32 KiB:
	// about where the model's text cap starts cutting, so a cut text can
	// always name the file). Capped at CaptureBytes.
	SpillAfter int
	// SpillMaxAge: New removes spill files older than this
	// (DefaultSpillMaxAge, 7 days).
	SpillMaxAge time.Duration
	// BaseEnv is the environment every command starts from ("NAME=value";
	// a local executor passes the daemon's, scrubbed with ScrubEnv). The
	// engine adds the non-interactive settings (PAGER=cat, …, DSH_ACP=1)
	// and then Spec.Env.
	BaseEnv []string
	// Redact lists secrets replaced by "[redacted: NAME]" in all output
	// (live chunks, results, task reads, spill files) before anything
	// keeps it; values shorter than MinSecretLen are ignored. An executor
	// passes the values it let into BaseEnv only by an allow list
	// (AllowedSecrets) and the daemon's API key.
	Redact []Secret
	// Logger receives diagnostics (ids, pids, sizes; never output or
	// commands). Nil means no logging.
	Logger *zap.Logger
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() (Config, error) {
	if c.MaxTimeout <= 0 {
		c.MaxTimeout = DefaultMaxTimeout
	}
	if c.DefaultTimeout <= 0 {
		c.DefaultTimeout = DefaultTimeout
	}
	c.DefaultTimeout = min(c.DefaultTimeout, c.MaxTimeout)
	if c.Grace <= 0 {
		c.Grace = DefaultGrace
	}
	if c.CaptureBytes <= 0 {
		c.CaptureBytes = DefaultCaptureBytes
	}
	if c.SpillAfter <= 0 {
		c.SpillAfter = DefaultSpillAfter
	}
	c.SpillAfter = min(c.SpillAfter, c.CaptureBytes)
	if c.SpillCap <= 0 {
		c.SpillCap = DefaultSpillCap
	}
	if c.SpillMaxAge <= 0 {
		c.SpillMaxAge = DefaultSpillMaxAge
	}
	if c.StateDir == "" {
		dir, err := DefaultStateDir()
		if err != nil {
			return c, err
		}
		c.StateDir = dir
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	c.BaseEnv = slices.Clone(c.BaseEnv)
	c.Redact = slices.Clone(c.Redact)
	return c, nil
}

// DefaultStateDir is the state directory used when Config.StateDir is
// empty: $XDG_STATE_HOME/dsh-acp, else ~/.local/state/dsh-acp.
func DefaultStateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "dsh-acp"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("default state dir: %w", err)
	}
	return filepath.Join(home, ".local", "state", "dsh-acp"), nil
}
