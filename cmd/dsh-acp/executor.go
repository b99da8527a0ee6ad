package main

import (
	"os"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/engine"
	"github.com/dsh-acp/dsh-acp/executor/local"
	"github.com/dsh-acp/dsh-acp/executor/ssh"
)

// newExecutor builds the executor --executor names: the local one, or the
// ssh one for an ssh:// address (it logs in with --ssh-identity or the
// daemon's ssh-agent, and connects at the first command).
func newExecutor(cfg config, secrets []string, log *zap.Logger) (executor.Executor, error) {
	if cfg.SSHTarget == nil {
		return local.New(local.Config{
			DefaultTimeout: cfg.Timeout,
			MaxTimeout:     cfg.MaxTimeout,
			Grace:          cfg.KillGrace,
			StateDir:       cfg.StateDir,
			AllowEnv:       cfg.AllowEnv,
			SecretValues:   secrets,
			Logger:         log,
		})
	}
	log.Info("commands run over ssh", zap.String("target", cfg.SSHTarget.String()))
	return ssh.New(ssh.Config{
		Target:      *cfg.SSHTarget,
		Identity:    cfg.SSHIdentity,
		AgentSocket: os.Getenv("SSH_AUTH_SOCK"),
		KnownHosts:  cfg.SSHKnownHosts,
		Engine: engine.Config{
			DefaultTimeout: cfg.Timeout,
			MaxTimeout:     cfg.MaxTimeout,
			Grace:          cfg.KillGrace,
			StateDir:       cfg.StateDir,
			Logger:         log,
		},
		AllowEnv:     cfg.AllowEnv,
		SecretValues: secrets,
	})
}
