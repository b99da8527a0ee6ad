package ssh

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/engine"
	"github.com/dsh-acp/dsh-acp/executor/sandbox"
)

// remoteBox is whether the host can build the sandbox levels: probed once,
// at the first confined command (over the connection that command needs
// anyway), never on the way to a command at LevelOff. Until then the
// confined levels are offered; a command at one of them on a host without a
// usable bubblewrap is refused with the probe's reason.
type remoteBox struct {
	once sync.Once
	mu   sync.Mutex
	done bool
	why  error // nil: the host's bubblewrap works
}

// errNotProbed is Unavailable's answer before the first confined command:
// the default level is off on a remote host.
var errNotProbed = fmt.Errorf("%w: commands on the remote host run unconfined unless a sandbox level is chosen (its bubblewrap is probed at the first confined command)", executor.ErrSandbox)

// check probes the host once and returns why it cannot sandbox, or nil.
func (b *remoteBox) check(s *Spawner) error {
	b.once.Do(func() {
		why := s.probeBox()
		b.mu.Lock()
		b.done, b.why = true, why
		b.mu.Unlock()
	})
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.why
}

// state is what the probe said, if it ran.
func (b *remoteBox) state() (done bool, why error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.done, b.why
}

// toolPackage is the package that has the remote tool prog.
func toolPackage(prog string) string {
	for _, t := range sandbox.RemoteTools {
		if t[0] == prog {
			return t[1]
		}
	}
	return prog
}

// probeBox runs sandbox.RemoteProbe on the host; its error is a
// *executor.SandboxReason naming the host, what it lacks and the fix.
func (s *Spawner) probeBox() error {
	p, err := s.Spawn(engine.Command{Spec: executor.Spec{Command: sandbox.RemoteProbe + " 2>&1", Workdir: "/", Level: executor.LevelOff}})
	if err != nil {
		return s.reason(fmt.Errorf("%w: the host's sandbox could not be probed: %w", executor.ErrSandbox, err), "",
			"Check that the host can be reached (the first command shows why not), then restart the agent: the probe runs once.")
	}
	var out bytes.Buffer
	done := make(chan struct{})
	go func() { _, _ = io.Copy(&out, io.LimitReader(p.Stdout(), 4096)); close(done) }()
	go func() { _, _ = io.Copy(io.Discard, p.Stderr()) }()
	waited := make(chan struct{})
	go func() { p.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(30 * time.Second):
		_ = p.Signal(syscall.SIGKILL)
		<-waited
	}
	p.Stdout().Close()
	p.Stderr().Close()
	<-done
	if exit := p.Release(); exit.Code != 0 || exit.Signal != "" {
		return s.probeFailed(strings.TrimSpace(out.String()))
	}
	return nil
}

// probeFailed is why the host cannot sandbox, from the probe's output.
func (s *Spawner) probeFailed(msg string) error {
	host := s.d.target.Host
	if rest, ok := strings.CutPrefix(msg, "missing "); ok {
		prog, path, _ := strings.Cut(rest, " ")
		pkg := toolPackage(prog)
		return s.reason(fmt.Errorf("%w: the host has no %s on its PATH", executor.ErrSandbox, prog), prog,
			fmt.Sprintf("Install %s on %s (Debian/Ubuntu: apt install %s), or put %s on the PATH its ssh commands get (now %s), then restart the agent.", pkg, host, pkg, prog, path))
	}
	if msg == "" {
		msg = "the probe failed without a message"
	}
	err := fmt.Errorf("%w: bubblewrap cannot sandbox commands on the host: %s", executor.ErrSandbox, msg)
	if userNamespacesRefused(msg) {
		return s.reason(err, "", fmt.Sprintf("Allow unprivileged user namespaces on %s (sysctl kernel.unprivileged_userns_clone=1; "+
			"on Ubuntu 24.04 also kernel.apparmor_restrict_unprivileged_userns=0), then restart the agent; see docs/security.md.", host))
	}
	return s.reason(err, "", fmt.Sprintf("See docs/security.md for what the sandbox needs on %s (bwrap, unshare, flock and GNU coreutils on its PATH, unprivileged user namespaces), then restart the agent.", host))
}

// userNamespacesRefused reports whether bwrap's or unshare's message says
// the kernel refused the user namespace.
func userNamespacesRefused(msg string) bool {
	for _, s := range []string{"Operation not permitted", "Permission denied", "No permissions to create", "user namespace"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// reason is err with the host, the program missing there and the fix.
func (s *Spawner) reason(err error, missing, fix string) error {
	return &executor.SandboxReason{Host: s.d.target.Host, Missing: missing, Fix: fix, Err: err}
}

// Levels implements engine.Leveler: every level until the host's probe
// said no, then LevelOff alone.
func (s *Spawner) Levels() []executor.Level {
	if done, why := s.box.state(); done && why != nil {
		return []executor.Level{executor.LevelOff}
	}
	return executor.AllLevels()
}

// DefaultLevel implements engine.Leveler: LevelOff — a remote host's
// sandbox is used when a level is chosen.
func (s *Spawner) DefaultLevel() executor.Level { return executor.LevelOff }

// Unavailable implements engine.Leveler: the probe's reason, nil once it
// succeeded, errNotProbed (with the level to choose) before.
func (s *Spawner) Unavailable() error {
	done, why := s.box.state()
	if !done {
		return s.reason(errNotProbed, "", fmt.Sprintf("Choose a sandbox level (/sandbox workspace) to run them inside the bubblewrap of %s.", s.d.target.Host))
	}
	return why
}
