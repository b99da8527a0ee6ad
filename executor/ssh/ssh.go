package ssh

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/engine"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultDialTimeout      = 10 * time.Second
	DefaultStartTimeout     = 30 * time.Second
	DefaultKeepAlive        = 4 * time.Second
	DefaultKeepAliveTimeout = 8 * time.Second
)

// Config configures New. Target is required; every zero field takes the
// default named in its comment.
type Config struct {
	// Target is the host (and the optional remote directory).
	Target Target
	// Identity is a private key file to log in with (--ssh-identity);
	// unencrypted, since the daemon cannot ask for a passphrase.
	Identity string
	// AgentSocket is the ssh-agent socket (the daemon's SSH_AUTH_SOCK).
	// The daemon uses it to log in; commands never see it. With neither an
	// identity nor an agent, the default key files are tried
	// (~/.ssh/id_ed25519, id_ecdsa, id_rsa).
	AgentSocket string
	// KnownHosts is the known_hosts file host keys are checked against
	// (--ssh-known-hosts); empty means ~/.ssh/known_hosts and
	// /etc/ssh/ssh_known_hosts. An unknown or changed key is refused.
	KnownHosts string
	// RemoteStateDir is the state directory on the host (spill files go to
	// its spill/ directory); empty means the host's
	// $XDG_STATE_HOME/dsh-acp, else ~/.local/state/dsh-acp.
	RemoteStateDir string
	// DialTimeout bounds a connection attempt: TCP, handshake and hello
	// (DefaultDialTimeout).
	DialTimeout time.Duration
	// StartTimeout bounds the wait for a command to start on the host
	// (DefaultStartTimeout).
	StartTimeout time.Duration
	// KeepAlive is the interval of keep-alives, KeepAliveTimeout how long
	// one may go unanswered before the connection counts as lost
	// (DefaultKeepAlive, DefaultKeepAliveTimeout: a silent network is
	// noticed within 12 s).
	KeepAlive, KeepAliveTimeout time.Duration
	// Engine configures the task engine: timeouts, the kill grace, the
	// local state directory, output bounds, the logger. Its BaseEnv and
	// DefaultWorkdir are ignored: commands start from the host's login
	// environment, scrubbed as a local one is (AllowEnv, SecretValues),
	// and a request without a directory runs in Target.Dir, else "/".
	Engine engine.Config
	// AllowEnv names variables of the host's login environment let through
	// the credential scrub; SecretValues are values no command may see.
	AllowEnv     []string
	SecretValues []string
}

// Executor is the task engine on an ssh Spawner, and an executor.Remote:
// sessions' directories are mapped to, checked on and named after the host.
type Executor struct {
	*engine.Engine
	target  Target
	spawner *Spawner
}

var (
	_ executor.Executor = (*Executor)(nil)
	_ executor.Confiner = (*Executor)(nil)
	_ executor.Remote   = (*Executor)(nil)
)

// New returns the ssh executor for cfg. It reads the identity file and
// the known_hosts files (a missing --ssh-known-hosts file, an unreadable
// or passphrase-protected identity are errors) but does not connect: the
// first command (or CheckDir) does.
func New(cfg Config) (*Executor, error) {
	if cfg.Target.Host == "" {
		return nil, fmt.Errorf("ssh executor: no host")
	}
	log := cfg.Engine.Logger
	if log == nil {
		log = zap.NewNop()
	}
	a, err := newAuth(cfg.Identity, cfg.AgentSocket, log)
	if err != nil {
		return nil, err
	}
	files, optional := defaultKnownHosts(), true
	if cfg.KnownHosts != "" {
		files, optional = []string{cfg.KnownHosts}, false
	}
	hosts, err := newHostKeys(files, optional)
	if err != nil {
		return nil, err
	}
	name := cfg.Target.User
	if name == "" {
		name, err = localUser()
		if err != nil {
			return nil, err
		}
	}
	ecfg := cfg.Engine
	ecfg.BaseEnv = nil
	ecfg.DefaultWorkdir = cfg.Target.Dir
	if ecfg.DefaultWorkdir == "" {
		ecfg.DefaultWorkdir = "/"
	}
	d := &dialer{
		target: cfg.Target, user: name, auth: a, hosts: hosts, stateDir: cfg.RemoteStateDir,
		allow: cfg.AllowEnv, secrets: cfg.SecretValues, log: log,
		timing: timing{
			dial:             orDefault(cfg.DialTimeout, DefaultDialTimeout),
			start:            orDefault(cfg.StartTimeout, DefaultStartTimeout),
			keepAlive:        orDefault(cfg.KeepAlive, DefaultKeepAlive),
			keepAliveTimeout: orDefault(cfg.KeepAliveTimeout, DefaultKeepAliveTimeout),
			grace:            orDefault(ecfg.Grace, engine.DefaultGrace),
			sweepAge:         orDefault(ecfg.SpillMaxAge, engine.DefaultSpillMaxAge),
		},
	}
	sp := &Spawner{d: d, spills: &spills{d: d}}
	e, err := engine.New(sp, ecfg)
	if err != nil {
		return nil, fmt.Errorf("ssh executor: %w", err)
	}
	return &Executor{Engine: e, target: cfg.Target, spawner: sp}, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// localUser is the name ssh logs in with by default.
func localUser() (string, error) {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username, nil
	}
	if n := os.Getenv("USER"); n != "" {
		return n, nil
	}
	return "", fmt.Errorf("ssh executor: no user name: give one in the address (ssh://user@host)")
}

// Target is where commands run.
func (e *Executor) Target() Target { return e.target }

// SessionDir implements executor.Remote: Target.Dir when the address has a
// path, else the client's directory itself.
func (e *Executor) SessionDir(clientDir string) string {
	if e.target.Dir != "" {
		return e.target.Dir
	}
	return clientDir
}

// CheckDir implements executor.Remote.
func (e *Executor) CheckDir(ctx context.Context, dir string) error {
	return e.spawner.checkDir(ctx, dir)
}

// Location implements executor.Remote: "host:/path".
func (e *Executor) Location(dir string) string { return e.target.Location(dir) }

// Describe implements executor.Remote.
func (e *Executor) Describe() string {
	return fmt.Sprintf("on the remote host %s, over SSH", e.target.Host)
}
