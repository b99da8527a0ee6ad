package main

import (
	"fmt"
	"os"
	"os/exec"
	"sync"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/local"
	"github.com/dsh-acp/dsh-acp/executor/sandbox"
	"github.com/dsh-acp/dsh-acp/executor/ssh"
)

// newExecutor builds the executor --executor names: the local one (inside
// bubblewrap at the --sandbox level), or the ssh one for an ssh:// address
// (commands run at off unless a level is chosen, then inside the host's
// bubblewrap) (it logs in with --ssh-identity or the daemon's ssh-agent, and
// connects at the first command).
//
// The local one is built on first use (see lazyExecutor), off the path to
// the initialize reply; only bash is looked up now, so a daemon that could
// run no command still fails at start.
func newExecutor(cfg config, secrets []string, log *zap.Logger) (executor.Executor, error) {
	// The same limits and redaction for every executor.
	limits := local.Config{
		DefaultTimeout: cfg.Timeout,
		MaxTimeout:     cfg.MaxTimeout,
		Grace:          cfg.KillGrace,
		StateDir:       cfg.StateDir,
		AllowEnv:       cfg.AllowEnv,
		SecretValues:   secrets,
		Logger:         log,
	}
	if cfg.SSHTarget == nil {
		if _, err := exec.LookPath("bash"); err != nil {
			return nil, fmt.Errorf("find bash: %w", err)
		}
		l := newLazyExecutor(func() (localExecutor, error) {
			return sandbox.New(sandbox.Config{Config: limits, Level: cfg.Sandbox})
		}, log)
		l.expect = sync.OnceValues(func() ([]executor.Level, executor.Level) { return expectedLevels(cfg.Sandbox) })
		return l, nil
	}
	log.Info("commands run over ssh", zap.String("target", cfg.SSHTarget.String()))
	return ssh.New(ssh.Config{
		Target:      *cfg.SSHTarget,
		Identity:    cfg.SSHIdentity,
		AgentSocket: os.Getenv("SSH_AUTH_SOCK"),
		KnownHosts:  cfg.SSHKnownHosts,
		// ssh.New drops the local base environment: the host's is its own.
		Engine:       limits.Engine(),
		AllowEnv:     cfg.AllowEnv,
		SecretValues: secrets,
	})
}

// expectedLevels guesses what the local executor will offer, without the
// sandbox probe: every level where bubblewrap is on PATH (the default then
// workspace, or the level asked for), else off alone. It walks PATH: the
// daemon asks once (newExecutor caches the answer), since the first
// session/new asks for both the levels and the default.
func expectedLevels(asked executor.Level) ([]executor.Level, executor.Level) {
	levels, def := executor.AllLevels(), executor.LevelWorkspace
	if _, err := exec.LookPath("bwrap"); err != nil {
		levels, def = []executor.Level{executor.LevelOff}, executor.LevelOff
	}
	if asked != "" {
		def = asked
	}
	return levels, def
}
