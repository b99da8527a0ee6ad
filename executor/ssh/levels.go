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

// probeBox runs sandbox.RemoteProbe on the host.
func (s *Spawner) probeBox() error {
	p, err := s.Spawn(engine.Command{Spec: executor.Spec{Command: sandbox.RemoteProbe + " 2>&1", Workdir: "/", Level: executor.LevelOff}})
	if err != nil {
		return fmt.Errorf("%w: the host's sandbox could not be probed: %w", executor.ErrSandbox, err)
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
	exit := p.Release()
	if exit.Code != 0 || exit.Signal != "" {
		msg := strings.TrimSpace(out.String())
		if msg == "" {
			msg = "bwrap or unshare(1) is not on the host's PATH"
		}
		return fmt.Errorf("%w: bubblewrap cannot sandbox commands on the host: %s", executor.ErrSandbox, msg)
	}
	return nil
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
// succeeded, errNotProbed before.
func (s *Spawner) Unavailable() error {
	done, why := s.box.state()
	if !done {
		return errNotProbed
	}
	return why
}
