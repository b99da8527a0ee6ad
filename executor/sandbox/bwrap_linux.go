package sandbox

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/engine"
	"github.com/dsh-acp/dsh-acp/executor/local"
)

// detect finds bubblewrap (name, else "bwrap" on PATH) and probes it; it
// returns why confined levels cannot be built here, or nil.
func (s *Spawner) detect(name string) error {
	var err error
	if s.bwrap, err = findBwrap(name); err != nil {
		return err
	}
	s.unshare, s.unshareWhy = findUnshare()
	return s.probe()
}

// findBwrap resolves the bubblewrap binary.
func findBwrap(name string) (string, error) {
	if name == "" {
		name = "bwrap"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: bubblewrap (%s) not found: %w", executor.ErrSandbox, name, err)
	}
	return path, nil
}

// probeTimeout bounds the probe; a healthy bwrap answers in milliseconds.
const probeTimeout = 10 * time.Second

// probe starts `true` in a read-only sandbox the way Spawn does.
func (s *Spawner) probe() error {
	dir, err := os.MkdirTemp("", "dsh-sandbox-probe-")
	if err != nil {
		return fmt.Errorf("%w: probe: %w", executor.ErrSandbox, err)
	}
	defer os.Remove(dir)
	cmd := engine.Command{Spec: executor.Spec{Command: "true", Workdir: dir, Workspace: dir, Level: executor.LevelReadOnly}, Env: os.Environ()}
	p, err := s.spawn(cmd, "")
	if err != nil {
		return fmt.Errorf("%w: bubblewrap cannot start here: %w", executor.ErrSandbox, err)
	}
	var stderr bytes.Buffer
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, p.Stdout())
	}()
	go func() {
		_, _ = io.Copy(&stderr, io.LimitReader(p.Stderr(), 4096))
		close(done)
	}()
	waited := make(chan struct{})
	go func() { p.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(probeTimeout):
		_ = p.Signal(syscall.SIGKILL)
		<-waited
	}
	_ = p.Signal(syscall.SIGKILL)
	p.Stdout().Close()
	p.Stderr().Close()
	<-done
	exit := p.Release()
	if exit.Code != 0 || exit.Signal != "" {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = fmt.Sprintf("exit %d %s", exit.Code, exit.Signal)
		}
		return fmt.Errorf("%w: bubblewrap cannot start here: %s", executor.ErrSandbox, msg)
	}
	return nil
}

// spawn starts cmd inside bubblewrap, and releases it once its start is
// confirmed (see confirm).
func (s *Spawner) spawn(cmd engine.Command, spillDir string) (*process, error) {
	if s.setHome {
		cmd.Env = setEnv(cmd.Env, "HOME", s.home)
	}
	cmd.Env = setEnv(cmd.Env, "TMPDIR", "/tmp")
	l, err := s.plain.Prepare(cmd)
	if err != nil {
		return nil, err
	}
	g, err := newGate()
	if err != nil {
		l.Discard()
		return nil, err
	}
	// bwrap writes to the info pipe after arming --die-with-parent; the
	// read end stays open until the process is released, so that write
	// never fails while the daemon lives. It reads its --seccomp program
	// from the gate pipe before it runs the command.
	l.Files = append(l.Files, g.infoW, g.gateR)
	l.Keep = append(l.Keep, g.infoR)
	// bash by the path the daemon found it at (the sandbox sees the same
	// tree), not by name: bwrap's execvp would walk the command's PATH, a
	// failed exec per directory before bash's (0.3-0.5 ms with a dozen).
	p, err := s.plan(cmd.Spec, spillDir, len(l.Files)+1, append([]string{l.Path}, l.Args[1:]...))
	if err != nil {
		g.abort()
		l.Discard()
		return nil, err
	}
	p.GateFD = p.InfoFD + 1
	l.Path, l.Args = s.bwrap, append([]string{"bwrap"}, args(p)...)
	// bwrap's own cwd does not matter; the command's is --chdir.
	l.Dir = "/"
	var launcher bool
	if l.SysProcAttr, launcher, err = s.launcher(l); err != nil {
		g.abort()
		s.places.release(p.Placeholders)
		l.Discard()
		return nil, err
	}
	l.Guard = s.guards.of(cmd.Spec.Level)
	lp, err := s.plain.Start(l)
	if err != nil {
		g.abort()
		s.places.release(p.Placeholders)
		return nil, fmt.Errorf("%w: %w", executor.ErrSandbox, err)
	}
	g.release(lp.Pid(), launcher)
	return &process{Process: lp, pid1: !launcher, release: func() { s.places.release(p.Placeholders) }}, nil
}

// launcher makes bwrap pid 1 of a pid namespace of its own: signals the
// daemon sends to the group then reach the command and not bwrap (a pid 1
// ignores them without a handler, SIGKILL aside), and when bwrap dies the
// kernel kills every process below it. It returns the clone attributes of
// l, and puts a launcher in front of bwrap where one is needed (launcher
// true):
//
//   - root clones the pid namespace directly;
//   - a dumpable non-root daemon clones it inside a user namespace with the
//     identity mapping of its uid and gid, which the Go runtime writes to
//     the child's /proc/PID/uid_map;
//   - a non-dumpable non-root daemon (the real one: MakeNonDumpable) cannot
//     write that map, because a child forked from a non-dumpable process
//     has root-owned /proc files until it execs. So the namespaces are made
//     by util-linux unshare(1), a fresh (dumpable) program that maps its
//     own ids and forks bwrap as pid 1; see viaUnshare.
//
// Whichever it is, the daemon's death ends bwrap by construction: see
// gate.release.
func (s *Spawner) launcher(l *local.Launch) (*syscall.SysProcAttr, bool, error) {
	if s.root {
		return &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}, false, nil
	}
	if dumpable() {
		return &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWPID | syscall.CLONE_NEWUSER,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
		}, false, nil
	}
	if s.unshare == "" {
		return nil, false, fmt.Errorf("%w: %w", executor.ErrSandbox, s.unshareWhy)
	}
	viaUnshare(l, s.unshare)
	// unshare(1) arms no parent-death signal of its own: the daemon's
	// death must end it. The runtime arms it before the exec and then
	// checks that the parent is still the daemon (a child reparented
	// elsewhere kills itself), so it holds from the fork on.
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}, true, nil
}

// viaUnshare puts `unshare --user --map-current-user --pid --fork
// --kill-child --` in front of l's bwrap. unshare blocks TERM and INT while
// it waits for bwrap (so the engine's TERM to the group reaches the command
// alone, as with a direct pid namespace), SIGKILLs bwrap if it dies itself,
// and exits with bwrap's status (re-raising a signal death). The info and
// gate pipes pass through it untouched.
func viaUnshare(l *local.Launch, unshare string) {
	args := append([]string{"unshare", "--user", "--map-current-user", "--pid", "--fork", "--kill-child", "--", l.Path}, l.Args[1:]...)
	l.Path, l.Args = unshare, args
}

// dumpable reports whether the daemon is dumpable (PR_GET_DUMPABLE 1).
func dumpable() bool {
	v, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	return err == nil && v == 1
}

// findUnshare resolves util-linux unshare(1), which a non-dumpable non-root
// daemon needs (see launcher); the error says why it cannot be used.
func findUnshare() (string, error) {
	path, err := exec.LookPath("unshare")
	if err != nil {
		return "", fmt.Errorf("a non-root daemon that keeps its memory unreadable (non-dumpable) needs util-linux unshare(1) to start bubblewrap: %w", err)
	}
	return path, nil
}

// process is a sandboxed command. bwrap reports a command's death by
// signal n as exit status 128+n (it cannot die of the same signal); Release
// turns that back into the signal's name.
type process struct {
	*local.Process
	started atomic.Bool // a command was seen running below bwrap (see Signal)
	release func()      // removes the command's placeholders
	// pid1: the daemon's child is bwrap itself, pid 1 of its pid
	// namespace (no launcher between). Its exit is reported only once
	// every process of the namespace has been reaped, so once Wait
	// returned the group holds nothing a signal could reach (gone).
	pid1 bool
	gone atomic.Bool
}

// Wait implements engine.Process.
func (p *process) Wait() {
	p.Process.Wait()
	if p.pid1 {
		p.gone.Store(true)
	}
}

// Release implements engine.Process; it also removes the placeholders the
// command's sandbox held (everything in its pid namespace is gone by now).
func (p *process) Release() engine.Exit {
	e := p.Process.Release()
	if p.release != nil {
		p.release()
	}
	if e.Signal == "" && e.Code > 128 && e.Code <= 128+64 {
		if name := unix.SignalName(syscall.Signal(e.Code - 128)); name != "" {
			e.Code, e.Signal = -1, name
		}
	}
	return e
}
