package local

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/engine"
)

const (
	// maxArgScript is the longest script passed as `bash -c script`; a
	// longer one is fed on fd 3 (one argv string may not exceed 128 KiB).
	maxArgScript = 64 << 10
	// longScriptPrefix closes fd 3 before the script's first command, so
	// the script pipe does not leak into the commands it starts. It shares
	// line 1 with the script, keeping $LINENO right.
	longScriptPrefix = "exec 3<&-; "
)

// SpawnerConfig configures NewSpawner.
type SpawnerConfig struct {
	// Limits bounds each command's processes where a pids cgroup can be
	// made (see Spawner.LimitsUnavailable).
	Limits Limits
	// Logger receives diagnostics; nil means none.
	Logger *zap.Logger
	// Guards are the Spawner's guard threads (see Guard), each a
	// dedicated, locked thread of its own that runs its setup once before
	// its first start; a Launch whose Guard names one starts from it. They
	// are for state a thread passes on to the children it forks and that
	// must not reach the others: a seccomp filter
	// (executor/sandbox/ipcguard). The Spawner ends them when it closes; a
	// Guard belongs to one Spawner.
	Guards []*Guard
}

// Spawner is the plain engine.Spawner: `bash -c` in a session and process
// group of its own on this machine. It is safe for concurrent use. Every
// process is started from one dedicated, locked OS thread, so a
// parent-death signal a child arms (bubblewrap's --die-with-parent) is tied
// to a thread that lives exactly as long as the Spawner.
type Spawner struct {
	bash      string
	log       *zap.Logger
	limits    *limiter // nil: no limit can be set here
	limitsWhy error
	waitExit  func(pid int) error // nil: this OS's waitExit (tests replace it)

	// devNull is every command's stdin when no Spec.Stdin is given: one
	// read-only /dev/null for the Spawner's life, not one open per start.
	// The spawn thread closes it when it ends, after the last start.
	devNull *os.File

	reqs      chan func()
	guards    []*Guard
	closeOnce sync.Once
	mu        sync.RWMutex // held for reading while a start is queued
	closed    bool
}

var _ engine.Spawner = (*Spawner)(nil)

// ErrSpawnerClosed is returned by Start after Close.
var ErrSpawnerClosed = errors.New("spawner is closed")

// NewSpawner finds bash on PATH and starts the spawn thread.
func NewSpawner(cfg SpawnerConfig) (*Spawner, error) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		return nil, fmt.Errorf("find bash: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", os.DevNull, err)
	}
	s := &Spawner{bash: bash, log: cfg.Logger, devNull: devNull, reqs: make(chan func()), guards: cfg.Guards}
	if s.limits, s.limitsWhy = newLimiter(cfg.Limits, cfg.Logger); s.limitsWhy != nil {
		cfg.Logger.Info("commands run without a process limit", zap.Error(s.limitsWhy))
	}
	go s.thread()
	return s, nil
}

// LimitsUnavailable says why commands run without a process limit here
// (no writable pids cgroup), or nil when Limits apply.
func (s *Spawner) LimitsUnavailable() error { return s.limitsWhy }

// thread runs every start on one locked OS thread. It never unlocks: when
// Close ends it, the Go runtime terminates the thread.
func (s *Spawner) thread() {
	runtime.LockOSThread()
	if s.limits != nil {
		s.limits.prepare()
	}
	for f := range s.reqs {
		f()
	}
	for _, g := range s.guards {
		g.close()
	}
	s.devNull.Close()
	if s.limits != nil {
		s.limits.close()
	}
}

// Close stops the spawn thread; later starts fail with ErrSpawnerClosed.
// Processes still running whose parent-death signal is armed (a sandbox's)
// are killed by the kernel when the thread ends.
func (s *Spawner) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		close(s.reqs)
		s.mu.Unlock()
	})
	return nil
}

// Spawn implements engine.Spawner for LevelOff; any other level is an
// error wrapping executor.ErrSandbox.
func (s *Spawner) Spawn(cmd engine.Command) (engine.Process, error) {
	if cmd.Spec.Level != executor.LevelOff && cmd.Spec.Level != "" {
		return nil, fmt.Errorf("%w: the plain spawner cannot confine a command (level %s)", executor.ErrSandbox, cmd.Spec.Level)
	}
	l, err := s.Prepare(cmd)
	if err != nil {
		return nil, err
	}
	return s.Start(l)
}

// Launch is one process start as Prepare builds it. A wrapping spawner
// (executor/sandbox) changes it before Start: another program in front of
// bash, more files, clone flags.
type Launch struct {
	// Path is the program to run; Args its argv (Args[0] included).
	Path string
	Args []string
	// Dir is the working directory of the started program; Workdir the
	// command's (already checked to exist).
	Dir, Workdir string
	Env          []string
	// Files become the child's fds 3, 4, … (Files[0] is fd 3). Start
	// closes them in the parent once the child has them.
	Files []*os.File
	// Keep are closed by Release (after the process is reaped), not before:
	// e.g. the read end of a pipe the child must be able to write to.
	Keep []io.Closer
	// SysProcAttr is used as given, except that Setsid is always set.
	SysProcAttr *syscall.SysProcAttr
	// Guard, when set, starts the process from that guard thread, which
	// must be one of SpawnerConfig.Guards (else the start fails); nil
	// starts it from the spawn thread.
	Guard *Guard

	stdin *os.File
	feeds []feed
	close []*os.File // parent ends closed if the start fails
}

// feed is data written to a pipe the child reads (stdin, the script).
type feed struct {
	w    *os.File
	data []byte
}

// Prepare checks cmd's workdir (an error wrapping executor.ErrWorkdir) and
// builds the Launch of `bash -c script bash` (a script over 64 KiB is fed on fd 3
// and sourced, `bash -c '. /dev/fd/3' bash`, keeping `bash -c`'s $0 and exit
// semantics), with stdin fed from Spec.Stdin or /dev/null. A Launch that is
// never started must be given to Discard.
func (s *Spawner) Prepare(cmd engine.Command) (*Launch, error) {
	spec := cmd.Spec
	if err := checkWorkdir(spec.Workdir); err != nil {
		return nil, err
	}
	// $0 is named after the command string, so the argument list stays
	// right when it is run by another program's path (bwrap's).
	l := &Launch{Path: s.bash, Args: []string{"bash", "-c", spec.Command, "bash"}, Dir: spec.Workdir, Workdir: spec.Workdir, Env: cmd.Env}
	if len(spec.Command) > maxArgScript {
		r, w, err := pipe()
		if err != nil {
			return nil, err
		}
		l.Files = append(l.Files, r)
		l.close = append(l.close, w)
		// `.` reads the whole file before running it, and keeps `bash -c`'s
		// $0 ("bash"), exit status and exit semantics.
		l.Args = []string{"bash", "-c", ". /dev/fd/3", "bash"}
		l.feeds = append(l.feeds, feed{w: w, data: []byte(longScriptPrefix + spec.Command)})
	}
	if len(spec.Stdin) > 0 {
		r, w, err := pipe()
		if err != nil {
			l.Discard()
			return nil, err
		}
		l.stdin = r
		l.close = append(l.close, w)
		l.feeds = append(l.feeds, feed{w: w, data: spec.Stdin})
	} // else Start connects /dev/null: never the daemon's stdin.
	return l, nil
}

// Discard closes the files of a Launch that will not be started.
func (l *Launch) Discard() {
	for _, f := range l.Files {
		f.Close()
	}
	for _, f := range l.close {
		f.Close()
	}
	if l.stdin != nil {
		l.stdin.Close()
	}
	for _, c := range l.Keep {
		c.Close()
	}
}

// Start starts l on the spawn thread. On error nothing is left running and
// every file of l is closed.
func (s *Spawner) Start(l *Launch) (_ *Process, err error) {
	outR, outW, err := outputPipe()
	if err != nil {
		l.Discard()
		return nil, err
	}
	errR, errW, err := outputPipe()
	if err != nil {
		outR.Close()
		outW.Close()
		l.Discard()
		return nil, err
	}
	stdin := s.devNull
	if l.stdin != nil {
		stdin = l.stdin
	}
	// os.StartProcess, not os/exec: exec.Cmd rebuilds and deduplicates the
	// environment on every start (the engine's is built once, without
	// duplicates) and copies the files into a table of its own.
	pa := &os.ProcAttr{Dir: l.Dir, Env: l.Env, Files: append([]*os.File{stdin, outW, errW}, l.Files...)}
	attr := &syscall.SysProcAttr{}
	if l.SysProcAttr != nil {
		*attr = *l.SysProcAttr
	}
	// Setsid: own session and process group (the group id is the pid), and
	// no controlling terminal, so /dev/tty prompts fail instead of hanging.
	attr.Setsid = true
	pa.Sys = attr
	var cg *commandCgroup
	var proc *os.Process
	if l.Guard != nil {
		proc, cg, err = s.startGuarded(l, pa)
	} else {
		err = s.onThread(func() (err error) {
			if s.limits != nil {
				var cgErr error
				if cg, cgErr = s.limits.take(); cgErr != nil {
					s.log.Warn("command runs without a process limit", zap.Error(cgErr))
					cg = nil
				} else {
					cg.apply(attr)
				}
			}
			proc, err = os.StartProcess(l.Path, l.Args, pa)
			return err
		}, func() {
			if s.limits != nil {
				s.limits.prepare()
			}
		})
	}
	// The child has its copies now (or never will).
	outW.Close()
	errW.Close()
	for _, f := range l.Files {
		f.Close()
	}
	if l.stdin != nil {
		l.stdin.Close()
	}
	if err != nil {
		if cg != nil {
			cg.remove()
		}
		outR.Close()
		errR.Close()
		for _, f := range l.close {
			f.Close()
		}
		for _, c := range l.Keep {
			c.Close()
		}
		return nil, startError(l, err)
	}
	p := newProcess(proc, outR, errR, l.feeds, l.Keep, s.log, s.waitExit)
	p.cg = cg
	for _, f := range p.feeds {
		go func() {
			_, _ = f.w.Write(f.data) // EPIPE when the child stops reading
			f.w.Close()
		}()
	}
	return p, nil
}

// startGuarded starts l from its guard thread (straight from the caller:
// the spawn thread has no part in it), in the cgroup that thread prepared.
func (s *Spawner) startGuarded(l *Launch, pa *os.ProcAttr) (*os.Process, *commandCgroup, error) {
	s.mu.RLock()
	defer s.mu.RUnlock() // Close ends the guard threads only after every start
	switch {
	case s.closed:
		return nil, nil, ErrSpawnerClosed
	case !slices.Contains(s.guards, l.Guard):
		return nil, nil, errNoGuard
	}
	proc, cg, cgErr, err := l.Guard.start(l.Path, l.Args, pa, s.limits)
	if cgErr != nil {
		s.log.Warn("command runs without a process limit", zap.Error(cgErr))
	}
	return proc, cg, err
}

// onThread runs start on the spawn thread and returns its error; then,
// once the caller has its answer, the thread runs after. In between the
// thread yields: the caller, made runnable by the answer, waits on the
// thread's own P, and would otherwise wait there until after (the next
// command's cgroup) is done or another thread steals it (~60-90 µs per
// call here); after then runs while the command does.
func (s *Spawner) onThread(start func() error, after func()) error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrSpawnerClosed
	}
	done := make(chan error, 1)
	s.reqs <- func() {
		done <- start()
		runtime.Gosched()
		after()
	}
	s.mu.RUnlock()
	return <-done
}

func pipe() (r, w *os.File, err error) {
	r, w, err = os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("pipe: %w", err)
	}
	return r, w, nil
}

// startError is the error of a failed start of l. The child reports every
// failure before exec (its chdir included) as "fork/exec <program>", which
// would name bash for a directory it cannot enter: when a directory is the
// cause, the error wraps executor.ErrWorkdir and names it instead.
func startError(l *Launch, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && (pe.Op == "chdir" || pe.Op == "fork/exec") {
		for _, dir := range []string{l.Workdir, l.Dir} {
			if dir == "" {
				continue
			}
			if werr := checkWorkdir(dir); werr != nil {
				return werr
			}
		}
		if pe.Op == "chdir" {
			return fmt.Errorf("%w %q: %w", executor.ErrWorkdir, l.Dir, pe.Err)
		}
	}
	return fmt.Errorf("start %s: %w", filepath.Base(l.Path), err)
}

// checkWorkdir requires an absolute path to an existing directory the
// daemon may enter (search permission, as chdir needs it). Its errors wrap
// executor.ErrWorkdir, name the directory and say why, e.g.
// `invalid working directory "/p/locked": permission denied`.
func checkWorkdir(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("%w %q: not an absolute path", executor.ErrWorkdir, dir)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("%w %q: %w", executor.ErrWorkdir, dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w %q: not a directory", executor.ErrWorkdir, dir)
	}
	if err := unix.Faccessat(unix.AT_FDCWD, dir, unix.X_OK, unix.AT_EACCESS); err != nil {
		return fmt.Errorf("%w %q: %w", executor.ErrWorkdir, dir, err)
	}
	return nil
}
