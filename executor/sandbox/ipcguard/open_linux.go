package ipcguard

import (
	"os"
	"path"
	"strconv"
	"strings"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// The supervisor's side of open(2), openat(2), creat(2) and truncate(2)
// that may write: it resolves the path once, in the caller's view, to an
// inode it holds; decides on that inode; and hands the caller a descriptor
// of that very inode (SECCOMP_IOCTL_NOTIF_ADDFD with SEND), opened with the
// caller's flags by a thread with the caller's identity (worker_linux.go).
// Nothing the caller's other threads or processes do meanwhile (rewriting
// the path, swapping a symlink, renaming a directory) changes what is
// opened: the kernel never resolves the caller's path again.

// openCall is one notified call, as read from the caller once.
type openCall struct {
	dirfd    int // the caller's dirfd, or AT_FDCWD
	path     string
	flags    int
	mode     uint32
	truncate bool // truncate(2): length applies, flags are O_WRONLY
	length   int64
	mknod    bool // mknod(2) of a FIFO: mode holds S_IFIFO
}

// writes reports whether the call writes to an existing file's data.
func (o *openCall) writes() bool {
	return o.truncate || o.flags&unix.O_ACCMODE != unix.O_RDONLY || o.flags&unix.O_TRUNC != 0
}

// answerOpen decides and answers one notified open, creat or truncate, on
// worker on (dispatch) or, nil, on a goroutine of its own.
func (g *Guard) answerOpen(n notif, on *worker) {
	pidfd, err := openThread(int(n.Pid))
	if err != nil {
		g.send(n.ID, errnoOf(err))
		return
	}
	defer unix.Close(pidfd)
	c, err := g.callerOf(pidfd, int(n.Pid))
	if err == nil {
		c.on = on
	}
	if err == nil && (c.capEff != 0 || c.tgid == os.Getpid()) {
		// A launcher setting the sandbox up (bubblewrap writing its
		// uid_map, creating its mount points, with every capability of
		// the user namespace it made), or the daemon's own guard thread
		// (the Go runtime writing a child's uid_map): code the daemon
		// started, before any of the command's runs. A command never
		// holds a capability (see the package's contract).
		if !g.idValid(n.ID) {
			g.send(n.ID, unix.ESRCH)
			return
		}
		g.sendContinue(n.ID)
		return
	}
	// Everything read through /proc/<tid> is read before the notification
	// is checked still pending: the tid named the caller all along.
	var in *input
	errno := unix.EACCES
	if err == nil {
		in, errno = readInput(n, c, g.calls[callKey{n.Data.Arch, n.Data.Nr}])
	}
	if in != nil {
		defer unix.Close(in.root)
	}
	if !g.idValid(n.ID) {
		g.send(n.ID, unix.ESRCH) // the tid may name another thread by now
		return
	}
	if errno != 0 {
		g.send(n.ID, errno)
		return
	}
	fd, errno := g.openFor(pidfd, c, in)
	if errno == needWhole {
		// A partial caller (callerInfo) whose call needs its umask or its
		// namespace's ids: read whole, and, as above, before the pending
		// check. Nothing was done yet.
		if c, err = readCaller(int(n.Pid)); err != nil {
			g.send(n.ID, unix.EACCES)
			return
		}
		c.on = on
		if !g.idValid(n.ID) {
			g.send(n.ID, unix.ESRCH)
			return
		}
		fd, errno = g.openFor(pidfd, c, in)
	}
	switch {
	case errno != 0:
		g.send(n.ID, errno)
	case in.call.truncate || in.call.mknod:
		g.send(n.ID, 0)
	default:
		g.sendFD(n.ID, fd, in.call.flags&unix.O_CLOEXEC != 0)
		unix.Close(fd)
	}
}

// callerOf is the caller of a notification: partial from its pidfd where
// that suffices (callerInfo), else read whole from its /proc status.
func (g *Guard) callerOf(pidfd, tid int) (*caller, error) {
	if g.meOK {
		if c, ok := callerInfo(pidfd, tid, g.me); ok {
			return c, nil
		}
	}
	return readCaller(tid)
}

// needWhole is openFor's answer where a partial caller's call needs what
// only its /proc status has (its umask to create, its pid namespace's ids
// for a path into /proc or /dev/fd): read whole, the call is decided again.
// It is never sent to a caller.
const needWhole = unix.Errno(0x7fff)

// procPath reports whether p (clean, absolute) names something in the
// caller's /proc or its /dev/fd and /dev/std* links, which are resolved
// with its pid namespace's ids (ownPath, ownFD).
func procPath(p string) bool {
	switch p {
	case "/proc", "/dev/stdin", "/dev/stdout", "/dev/stderr":
		return true
	}
	return strings.HasPrefix(p, "/proc/") || strings.HasPrefix(p, "/dev/fd/")
}

// input is what answering a call needs from the caller's /proc: the call,
// the caller's root and the path made absolute in its view.
type input struct {
	call *openCall
	root int
	abs  string
}

// readInput reads n's call, opens the caller's root and makes the path
// absolute.
func readInput(n notif, c *caller, kind callKind) (*input, unix.Errno) {
	call, errno := readCall(n, kind)
	if errno != 0 {
		return nil, errno
	}
	proc := "/proc/" + strconv.Itoa(c.tid)
	abs, errno := absPath(proc, call)
	if errno != 0 {
		return nil, errno
	}
	root, err := unix.Open(proc+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, errnoOf(err)
	}
	return &input{call: call, root: root, abs: abs}, 0
}

// readCall reads notification n's arguments and path.
func readCall(n notif, kind callKind) (*openCall, unix.Errno) {
	a, _ := abiOf(n.Data.Arch)
	args := n.Data.Args
	if a.compat {
		for i := range args {
			args[i] = uint64(uint32(args[i]))
		}
	}
	o := &openCall{dirfd: unix.AT_FDCWD}
	var ptr uint64
	switch kind {
	case callOpen:
		ptr, o.flags, o.mode = args[0], int(int32(args[1])), uint32(args[2])
	case callOpenat:
		o.dirfd, ptr, o.flags, o.mode = int(int32(args[0])), args[1], int(int32(args[2])), uint32(args[3])
	case callCreat:
		ptr, o.flags, o.mode = args[0], unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, uint32(args[1])
	case callTruncate:
		ptr, o.flags, o.truncate, o.length = args[0], unix.O_WRONLY, true, int64(args[1])
		if a.compat {
			o.length = int64(int32(args[1]))
		}
	case callMknod:
		ptr, o.mode, o.mknod, o.flags = args[0], uint32(args[1]), true, unix.O_CREAT|unix.O_EXCL
	case callMknodat:
		o.dirfd, ptr, o.mode, o.mknod, o.flags = int(int32(args[0])), args[1], uint32(args[2]), true, unix.O_CREAT|unix.O_EXCL
	case callTrunc64:
		lo := a.trunc64Low
		ptr, o.flags, o.truncate, o.length = args[0], unix.O_WRONLY, true, int64(args[lo]|args[lo+1]<<32)
	default:
		return nil, unix.ENOSYS
	}
	p, err := readString(int(n.Pid), ptr)
	if err != nil {
		return nil, errnoOf(err)
	}
	if p == "" {
		return nil, unix.ENOENT
	}
	o.path = p
	return o, 0
}

// readString reads the NUL-terminated string at addr of process pid, a
// page at most at a time (a string may end just before an unmapped page),
// up to PATH_MAX.
func readString(pid int, addr uint64) (string, error) {
	var out []byte
	for first := true; len(out) < unix.PathMax; first = false {
		chunk := 4096 - int(addr%4096)
		if first && chunk > 256 {
			chunk = 256 // most paths are short; the rest of the page next
		}
		buf := make([]byte, chunk)
		if err := readMem(pid, addr, buf); err != nil {
			return "", unix.EFAULT
		}
		if i := strings.IndexByte(string(buf), 0); i >= 0 {
			return string(append(out, buf[:i]...)), nil
		}
		out = append(out, buf...)
		addr += uint64(chunk)
	}
	return "", unix.ENAMETOOLONG
}

// target is a path resolved in the caller's view.
type target struct {
	dir  int    // the parent directory (O_PATH), -1 for the caller's own descriptor
	name string // the entry in dir
	pin  int    // the entry (O_PATH, or the caller's own open file), -1 when absent
	st   unix.Stat_t
	own  bool // pin is a descriptor of the caller's (a /proc/self/fd link)
}

func (t *target) close() {
	if t.dir >= 0 {
		unix.Close(t.dir)
	}
	if t.pin >= 0 {
		unix.Close(t.pin)
	}
}

// openFor makes the caller's call on its behalf and returns the
// descriptor to hand it (none for truncate).
func (g *Guard) openFor(pidfd int, c *caller, in *input) (int, unix.Errno) {
	call := in.call
	if strings.HasSuffix(call.path, "/") {
		call.flags |= unix.O_DIRECTORY
	}
	// A create races with others: where the name appeared meanwhile, the
	// whole decision is made again on what is there now.
	for range 8 {
		follow := call.flags&unix.O_NOFOLLOW == 0 && call.flags&(unix.O_CREAT|unix.O_EXCL) != unix.O_CREAT|unix.O_EXCL
		t, errno := resolve(pidfd, in.root, in.abs, c, follow)
		if errno != 0 {
			return -1, errno
		}
		fd, errno := g.decideOpen(c, call, t, in.root)
		t.close()
		if errno != unix.EAGAIN {
			return fd, errno
		}
	}
	return -1, unix.EAGAIN
}

// absPath is call's path made absolute in the caller's view: relative to
// its working directory, or to the directory its dirfd names.
func absPath(proc string, call *openCall) (string, unix.Errno) {
	if call.path[0] == '/' {
		return call.path, 0
	}
	link := proc + "/cwd"
	if call.dirfd != unix.AT_FDCWD {
		if call.dirfd < 0 {
			return "", unix.EBADF
		}
		link = proc + "/fd/" + strconv.Itoa(call.dirfd)
	}
	base, err := readlink(link)
	if err != nil {
		return "", unix.EBADF
	}
	if base == "" || base[0] != '/' {
		return "", unix.ENOTDIR // a pipe or socket, or a directory gone
	}
	return base + "/" + call.path, 0
}

func readlink(p string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlink(p, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// maxHops is the kernel's bound on symlinks followed in one resolution.
const maxHops = 40

// resolve resolves p (absolute, in the caller's view) inside root: every
// component but the last by the kernel, with RESOLVE_IN_ROOT (absolute
// symlinks and ".." stay inside the caller's root) and magic links
// refused; the last one here, a symlink followed (when follow) by
// resolving its target the same way. A path to one of the caller's own
// descriptors (/proc/self/fd/N, /dev/fd/N, /dev/stdout, ...) is that
// descriptor, taken with pidfd_getfd.
func resolve(pidfd, root int, p string, c *caller, follow bool) (*target, unix.Errno) {
	for range maxHops {
		if p = path.Clean(p); c.partial && procPath(p) {
			return nil, needWhole
		}
		p = ownPath(p, c)
		if fd, ok := ownFD(p, c); ok {
			pin, err := unix.PidfdGetfd(pidfd, fd, 0)
			if err != nil {
				return nil, errnoOf(err)
			}
			t := &target{dir: -1, pin: pin, own: true}
			if err := unix.Fstat(pin, &t.st); err != nil {
				t.close()
				return nil, errnoOf(err)
			}
			return t, 0
		}
		dir, name := path.Split(p)
		if name == "" {
			name = "." // the root itself
		}
		dfd, err := unix.Openat2(root, dir, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
		if err != nil {
			return nil, errnoOf(err)
		}
		t := &target{dir: dfd, name: name, pin: -1}
		pin, err := unix.Openat(dfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if errnoOf(err) == unix.ENOENT {
				return t, 0
			}
			t.close()
			return nil, errnoOf(err)
		}
		t.pin = pin
		if err := unix.Fstat(pin, &t.st); err != nil {
			t.close()
			return nil, errnoOf(err)
		}
		if t.st.Mode&unix.S_IFMT != unix.S_IFLNK || !follow {
			return t, 0
		}
		to, err := readlinkFD(pin)
		t.close()
		if err != nil {
			return nil, errnoOf(err)
		}
		if to == "" {
			return nil, unix.ENOENT
		}
		if to[0] != '/' {
			to = dir + to
		}
		p = to
	}
	return nil, unix.ELOOP
}

func readlinkFD(fd int) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// ownPath rewrites the names of the caller's own /proc directory into its
// pid namespace's numbers (the supervisor is outside that namespace, where
// /proc/self means nothing), and bubblewrap's /dev/fd and /dev/std* into
// /proc/self/fd/N.
func ownPath(p string, c *caller) string {
	switch p {
	case "/dev/stdin":
		p = "/proc/self/fd/0"
	case "/dev/stdout":
		p = "/proc/self/fd/1"
	case "/dev/stderr":
		p = "/proc/self/fd/2"
	}
	if rest, ok := strings.CutPrefix(p, "/dev/fd/"); ok {
		p = "/proc/self/fd/" + rest
	}
	tgid := "/proc/" + strconv.Itoa(c.nsTgid)
	for _, r := range []struct{ from, to string }{
		{"/proc/self", tgid},
		{"/proc/thread-self", tgid + "/task/" + strconv.Itoa(c.nsTid)},
	} {
		if p == r.from || strings.HasPrefix(p, r.from+"/") {
			return r.to + p[len(r.from):]
		}
	}
	return p
}

// ownFD reports whether p names one of the caller's own descriptors in
// its /proc, and which.
func ownFD(p string, c *caller) (int, bool) {
	rest, ok := strings.CutPrefix(p, "/proc/"+strconv.Itoa(c.nsTgid)+"/")
	if !ok {
		return 0, false
	}
	rest = strings.TrimPrefix(rest, "task/"+strconv.Itoa(c.nsTid)+"/")
	num, ok := strings.CutPrefix(rest, "fd/")
	if !ok {
		return 0, false
	}
	fd, err := strconv.Atoi(num)
	if err != nil || fd < 0 || strconv.Itoa(fd) != num {
		return 0, false
	}
	return fd, true
}

// ttyDev is /dev/tty's device number (5, 0): the opener's controlling
// terminal, which for the supervisor would be the daemon's.
var ttyDev = unix.Mkdev(5, 0)

// decideOpen decides call on t and makes it: the descriptor to hand the
// caller, or the errno to answer (EAGAIN: resolve again, a create raced).
func (g *Guard) decideOpen(c *caller, call *openCall, t *target, root int) (int, unix.Errno) {
	f := call.flags
	if call.mknod {
		if t.pin >= 0 {
			return -1, unix.EEXIST
		}
		return -1, g.mkfifo(c, call, t)
	}
	if t.pin < 0 {
		if f&unix.O_CREAT == 0 || call.truncate {
			return -1, unix.ENOENT
		}
		return g.create(c, call, t)
	}
	if f&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL && !call.truncate {
		return -1, unix.EEXIST
	}
	if f&unix.O_PATH != 0 {
		fd, err := unix.Dup(t.pin) // the kernel ignores write flags with O_PATH
		return fd, errnoOf(err)
	}
	if f&unix.O_TMPFILE == unix.O_TMPFILE {
		return g.tmpfile(c, call, t)
	}
	switch t.st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return -1, unix.ELOOP // O_NOFOLLOW on a symlink
	case unix.S_IFIFO:
		if f&unix.O_ACCMODE != unix.O_RDONLY && !g.linksOnly && !g.ownFIFO(t, root) && !g.fifos.has(t.pin) {
			g.log.Info("ipcguard: FIFO write refused", zap.Int("pid", c.tid), zap.String("path", call.path))
			return -1, unix.EACCES
		}
	case unix.S_IFCHR:
		if t.st.Rdev == ttyDev {
			return -1, unix.ENXIO // no controlling terminal here
		}
	case unix.S_IFDIR:
		if call.truncate || f&unix.O_CREAT != 0 {
			return -1, unix.EISDIR
		}
	case unix.S_IFREG:
		if call.writes() && t.st.Nlink > 1 {
			return g.breakLink(c, call, t)
		}
	}
	if call.truncate && t.st.Mode&unix.S_IFMT != unix.S_IFREG {
		return -1, unix.EINVAL
	}
	if !t.own && onProc(t.pin) {
		// A write to procfs (or sysfs) made by the daemon would be judged
		// by the daemon's namespaces (a sysctl of the host's), not the
		// caller's.
		return -1, unix.EACCES
	}
	return g.reopen(c, call, t.pin)
}

// ownFIFO reports whether a FIFO may be opened for writing: an anonymous
// pipe the caller holds, or a FIFO on its private /tmp (under root).
func (g *Guard) ownFIFO(t *target, root int) bool {
	var fs unix.Statfs_t
	if t.own && unix.Fstatfs(t.pin, &fs) == nil && fs.Type == unix.PIPEFS_MAGIC {
		return true
	}
	tmpDev, ok := g.privateTmp(root)
	return ok && t.st.Dev == tmpDev
}

// onProc reports whether fd is on procfs or sysfs.
func onProc(fd int) bool {
	var fs unix.Statfs_t
	if unix.Fstatfs(fd, &fs) != nil {
		return true
	}
	return fs.Type == unix.PROC_SUPER_MAGIC || fs.Type == unix.SYSFS_MAGIC
}

// reopenFlags are call's flags for reopening an inode already resolved.
func reopenFlags(call *openCall) int {
	return call.flags&^(unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC) | unix.O_CLOEXEC
}

// reopen opens the inode pin holds with call's flags (or truncates it),
// as the caller: through /proc/self/fd, so no path is resolved again.
func (g *Guard) reopen(c *caller, call *openCall, pin int) (int, unix.Errno) {
	fd := -1
	var err error
	werr := g.onWorker(c, func() {
		fd, err = unix.Open(fdPath(pin), reopenFlags(call), 0)
		if err == nil && call.truncate {
			err = unix.Ftruncate(fd, call.length)
			unix.Close(fd)
			fd = -1
		}
	})
	if werr != nil {
		g.log.Warn("ipcguard: worker", zap.Error(werr))
		return -1, unix.EACCES
	}
	return fd, errnoOf(err)
}

func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// create makes the file t names, which did not exist: with O_EXCL always
// (so nothing that appeared meanwhile is opened: EAGAIN then, and the
// caller's call is decided again) and with the caller's umask.
func (g *Guard) create(c *caller, call *openCall, t *target) (int, unix.Errno) {
	if t.dir < 0 {
		return -1, unix.ENOENT
	}
	if call.flags&unix.O_DIRECTORY != 0 {
		return -1, unix.EISDIR
	}
	if c.partial {
		return -1, needWhole // the caller's umask
	}
	fd, errno := g.openAsCaller(c, func() (int, error) {
		return unix.Openat(t.dir, t.name, reopenFlags(call)|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW, call.mode)
	})
	if errno == unix.EEXIST && call.flags&unix.O_EXCL == 0 {
		return -1, unix.EAGAIN
	}
	return fd, errno
}

// tmpfile makes an unnamed file in the directory t names (O_TMPFILE).
func (g *Guard) tmpfile(c *caller, call *openCall, t *target) (int, unix.Errno) {
	if c.partial {
		return -1, needWhole // the caller's umask
	}
	return g.openAsCaller(c, func() (int, error) {
		return unix.Openat(t.pin, ".", call.flags&^unix.O_CLOEXEC|unix.O_CLOEXEC, call.mode)
	})
}

// openAsCaller runs open on a worker with c's identity and umask: EACCES
// where no worker can take that identity.
func (g *Guard) openAsCaller(c *caller, open func() (int, error)) (int, unix.Errno) {
	fd := -1
	var err error
	werr := g.onWorker(c, func() {
		old := unix.Umask(int(c.umask))
		fd, err = open()
		unix.Umask(old)
	})
	if werr != nil {
		g.log.Warn("ipcguard: worker", zap.Error(werr))
		return -1, unix.EACCES
	}
	return fd, errnoOf(err)
}
