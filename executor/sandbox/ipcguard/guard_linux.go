package ipcguard

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// Config configures New.
type Config struct {
	// Logger receives a line per refused connect or open and per broken
	// hard link (Info) and the supervisor's own failures (Warn); nil
	// means none.
	Logger *zap.Logger
	// LinksOnly keeps only the hard-link rule, for a level with network
	// (workspace-network), where the host's sockets and FIFOs are within
	// reach anyway: sockets are left alone, and a FIFO may be opened for
	// writing; a write through a hard link still goes to a copy.
	LinksOnly bool
}

// Guard is the filter and its supervisor. Its zero value is not usable:
// make one with New.
type Guard struct {
	log       *zap.Logger
	linksOnly bool
	rules     rules
	hostTmp   uint64 // st_dev of the daemon's own /tmp; 0 when it has none
	me        self   // the daemon's identity (callerInfo); meOK: read
	meOK      bool
	meKey     string // me as a worker's identity
	// dispatches: the daemon holds no capability, so its opens are
	// answered on workers of its identity (dispatch).
	dispatches bool

	mu       sync.Mutex
	listener int // -1 until Install
	closed   bool
	wakeR    int // Close writes to wakeW; the loop polls wakeR
	wakeW    int
	loopDone chan struct{}
	handlers sync.WaitGroup
	answered atomic.Uint64
	inflight atomic.Int64
	// maxInflight bounds the connects answered at once (each may block a
	// thread of the daemon); the one over it is answered EAGAIN at once.
	maxInflight int64
	hold        func() // tests: run by each handler before it decides
	calls       map[callKey]callKind
	workers     workers // threads that open with a caller's identity
	fifos       madeFIFOs
}

// maxInflight is Guard.maxInflight: enough for any build's parallelism,
// few enough that a flood of connects to a listener that never accepts
// cannot exhaust the daemon's threads.
const maxInflight = 256

// New returns a Guard that is not installed yet. It makes no system call
// beyond a stat of /tmp and the reads of the daemon's own identity.
func New(cfg Config) *Guard {
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	g := &Guard{log: log, linksOnly: cfg.LinksOnly, rules: rules{sockets: !cfg.LinksOnly, files: true}, listener: -1, wakeR: -1, wakeW: -1, maxInflight: maxInflight, calls: callTable(arches)}
	var st unix.Stat_t
	if unix.Stat("/tmp", &st) == nil {
		g.hostTmp = st.Dev
	}
	g.me, g.meOK = daemonSelf()
	if g.meOK {
		g.meKey = (&caller{fsuid: g.me.fsuid, fsgid: g.me.fsgid, groups: g.me.groups}).identity()
		g.dispatches = effectiveCaps(unix.Gettid()) == 0
	}
	return g
}

// ErrClosed is returned by Install after Close.
var ErrClosed = errors.New("ipcguard: closed")

// Install loads the filter on the calling OS thread and starts the
// supervisor. The thread must be locked to its goroutine for good (never
// unlocked: the Go runtime then ends it with the goroutine, and never
// clones a new thread from it) and must start nothing but sandboxes: every
// process it starts from then on, and all of theirs, are filtered, for
// life. Install fails where the kernel lacks what the supervisor needs:
// seccomp user notification, pidfd_getfd and openat2 (Linux 5.6; then it
// loads nothing), SECCOMP_ADDFD_FLAG_SEND (Linux 5.14; then the thread
// keeps a filter nobody answers, and must start nothing). It may succeed
// once per Guard.
func (g *Guard) Install() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.closed:
		return ErrClosed
	case g.listener >= 0:
		return errors.New("ipcguard: installed twice")
	}
	if err := kernelSupport(); err != nil {
		return err
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return fmt.Errorf("ipcguard: pipe: %w", err)
	}
	fd, err := install(g.rules)
	if err == nil {
		err = addfdSupport(fd)
	}
	if err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return err
	}
	syncWakeUp(fd)
	g.listener, g.wakeR, g.wakeW = fd, p[0], p[1]
	g.loopDone = make(chan struct{})
	go g.loop()
	return nil
}

// syncWakeUp asks the kernel (Linux 6.6) to wake the supervisor on the
// caller's CPU, and the caller on the supervisor's, for each notification
// and answer: the two never run at once, and a round trip then costs
// about 10 µs instead of two cross-CPU wake-ups (35-140 µs here). An
// older kernel refuses the flag; the guard works the same without it.
func syncWakeUp(listener int) {
	_, _, _ = unix.Syscall(unix.SYS_IOCTL, uintptr(listener), unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
}

// kernelSupport checks for pidfd_getfd and openat2 by calling them with
// arguments that fail before doing anything: ENOSYS means absent.
func kernelSupport() error {
	if _, err := unix.PidfdGetfd(-1, 0, 0); errors.Is(err, unix.ENOSYS) {
		return errors.New("ipcguard: this kernel has no pidfd_getfd (Linux 5.6)")
	}
	if _, err := unix.Openat2(-1, "", &unix.OpenHow{}); errors.Is(err, unix.ENOSYS) {
		return errors.New("ipcguard: this kernel has no openat2 (Linux 5.6)")
	}
	return nil
}

// addfdSupport checks that listener takes SECCOMP_IOCTL_NOTIF_ADDFD with
// SECCOMP_ADDFD_FLAG_SEND (Linux 5.14): asked for a notification that does
// not exist, it answers ENOENT, where an older kernel refuses the flag or
// the request (EINVAL, ENOTTY). On failure the listener is closed: the
// thread keeps the filter, whose notifying calls then fail with ENOSYS.
func addfdSupport(listener int) error {
	add := notifAddfd{ID: ^uint64(0), Flags: unix.SECCOMP_ADDFD_FLAG_SEND, Srcfd: uint32(listener)}
	err := ioctl(listener, unix.SECCOMP_IOCTL_NOTIF_ADDFD, unsafe.Pointer(&add))
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	unix.Close(listener)
	return fmt.Errorf("ipcguard: this kernel cannot hand a descriptor with an answer (SECCOMP_ADDFD_FLAG_SEND, Linux 5.14): %v", err)
}

// Close stops the supervisor. A filtered process still running then gets
// ENOSYS from connect(2): the guard fails closed. Close returns once the
// supervisor stopped taking notifications; connects it is still making on a
// process's behalf finish on their own.
func (g *Guard) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	done := g.loopDone
	if g.wakeW >= 0 {
		_, _ = unix.Write(g.wakeW, []byte{0})
	}
	g.mu.Unlock()
	if done == nil {
		return nil
	}
	<-done
	go func() {
		// The listener and the pipe stay open until the last answer is sent,
		// so no answer can land on a reused descriptor.
		g.handlers.Wait()
		unix.Close(g.listener)
		unix.Close(g.wakeR)
		unix.Close(g.wakeW)
	}()
	return nil
}

// seccompData, notif and notifResp are the kernel's struct seccomp_data,
// seccomp_notif and seccomp_notif_resp.
type seccompData struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

type notif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  seccompData
}

type notifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// loop takes notifications until Close, or until no process uses the
// filter any more (the listener hangs up), and answers each on a goroutine
// of its own: a connect made on a process's behalf may block.
func (g *Guard) loop() {
	defer close(g.loopDone)
	for {
		fds := []unix.PollFd{{Fd: int32(g.listener), Events: unix.POLLIN}, {Fd: int32(g.wakeR), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			g.log.Warn("ipcguard: poll", zap.Error(err))
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		if fds[0].Revents&unix.POLLIN == 0 {
			return // POLLHUP: no filtered process is left, nor the thread
		}
		var n notif
		if err := ioctl(g.listener, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&n)); err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINTR) {
				continue // the caller was interrupted or died
			}
			g.log.Warn("ipcguard: receive", zap.Error(err))
			return
		}
		if g.inflight.Add(1) > g.maxInflight {
			g.inflight.Add(-1)
			g.send(n.ID, unix.EAGAIN)
			continue
		}
		kind := g.calls[callKey{n.Data.Arch, n.Data.Nr}]
		if g.quick(n, kind) {
			g.inflight.Add(-1)
			continue
		}
		if kind != callConnect && g.dispatch(n) {
			continue
		}
		g.handlers.Add(1)
		go func() {
			defer g.handlers.Done()
			defer g.inflight.Add(-1)
			if g.hold != nil {
				g.hold()
			}
			g.answer(n, kind)
		}()
	}
}

// quick answers notification n on the loop's own thread when no decision
// needs /proc or may block (true), so the commonest calls cost the caller
// one thread switch each way, on one CPU (see syncWakeUp):
//   - an open, create or truncate by a caller holding capabilities: a
//     launcher setting the sandbox up (see answerOpen), let through;
//   - an open of "/dev/tty", which every bash makes at its start: there
//     is no controlling terminal in a sandbox, so it fails with ENXIO as
//     the full path would (a /dev/tty replaced by something else is then
//     refused, which costs a command nothing it could have).
func (g *Guard) quick(n notif, kind callKind) bool {
	if kind == callConnect {
		return false
	}
	if effectiveCaps(int(n.Pid)) != 0 {
		if g.idValid(n.ID) { // the tid named the caller when its capabilities were read
			g.sendContinue(n.ID)
		} else {
			g.send(n.ID, unix.ESRCH)
		}
		return true
	}
	if kind == callOpen || kind == callOpenat {
		if call, errno := readCall(n, kind); errno == 0 && call.path == "/dev/tty" {
			g.send(n.ID, unix.ENXIO)
			return true
		}
	}
	return false
}

// answer decides notification n and answers it: a connect by decide, a
// call that opens or truncates by path by decideOpen.
func (g *Guard) answer(n notif, kind callKind) {
	if kind == callConnect {
		g.send(n.ID, g.decide(n))
		return
	}
	g.answerOpen(n, nil)
}

// Answered is how many calls the supervisor has answered so far.
func (g *Guard) Answered() uint64 { return g.answered.Load() }

// send answers notification id with errno (0: success); a caller that
// went away in the meantime (ENOENT) needs no answer.
func (g *Guard) send(id uint64, errno unix.Errno) {
	resp := notifResp{ID: id}
	if errno != 0 {
		resp.Error = -int32(errno)
	}
	g.sendResp(resp)
}

// sendContinue lets the kernel run notification id's call as made.
func (g *Guard) sendContinue(id uint64) {
	g.sendResp(notifResp{ID: id, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE})
}

// notifAddfd is the kernel's struct seccomp_notif_addfd.
type notifAddfd struct {
	ID         uint64
	Flags      uint32
	Srcfd      uint32
	Newfd      uint32
	NewfdFlags uint32
}

// sendFD answers notification id with a copy of fd installed in the
// caller (SECCOMP_ADDFD_FLAG_SEND, Linux 5.14): the call returns its
// number, as an open does; cloexec sets the copy's FD_CLOEXEC. Where the
// copy cannot be installed (EMFILE), the call fails with that error.
func (g *Guard) sendFD(id uint64, fd int, cloexec bool) {
	add := notifAddfd{ID: id, Flags: unix.SECCOMP_ADDFD_FLAG_SEND, Srcfd: uint32(fd)}
	if cloexec {
		add.NewfdFlags = unix.O_CLOEXEC
	}
	err := ioctl(g.listener, unix.SECCOMP_IOCTL_NOTIF_ADDFD, unsafe.Pointer(&add))
	switch {
	case err == nil:
		g.answered.Add(1)
	case errors.Is(err, unix.ENOENT):
	default:
		g.send(id, errnoOf(err))
	}
}

func (g *Guard) sendResp(resp notifResp) {
	g.answered.Add(1)
	if err := ioctl(g.listener, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp)); err != nil && !errors.Is(err, unix.ENOENT) {
		g.log.Warn("ipcguard: answer", zap.Error(err))
	}
}

// idValid reports whether notification id still waits for its answer.
func (g *Guard) idValid(id uint64) bool {
	return ioctl(g.listener, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&id)) == nil
}

func ioctl(fd int, req uint, arg unsafe.Pointer) error {
	for {
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return e
		}
		return nil
	}
}
