package ipcguard

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// maxAddr is sizeof(struct sockaddr_storage): the kernel refuses a longer
// address with EINVAL.
const maxAddr = 128

// decide handles one connect(2): it makes the connect itself, on the
// caller's socket (a duplicate taken with pidfd_getfd) and with its own
// copy of the address, so what it checked is what is connected whatever
// the caller's other threads do meanwhile; it returns the errno to answer
// (0: connected). A path-bound AF_UNIX address is connected only when it
// names a socket on the caller's private /tmp; AF_UNIX abstract and
// unnamed, AF_INET, AF_INET6 and AF_UNSPEC addresses are connected as given
// (the socket's network namespace, the sandbox's, resolves them); any
// other family is refused (EACCES).
func (g *Guard) decide(n notif) unix.Errno {
	alen := int64(int32(uint32(n.Data.Args[2])))
	if alen < 2 || alen > maxAddr {
		return unix.EINVAL
	}
	pidfd, err := openThread(int(n.Pid))
	if err != nil {
		return errnoOf(err)
	}
	defer unix.Close(pidfd)
	if !g.idValid(n.ID) {
		return unix.ESRCH // the pid may name another process by now
	}
	addr := make([]byte, alen)
	if err := readMem(int(n.Pid), n.Data.Args[1], addr); err != nil {
		return unix.EFAULT
	}
	sock, err := unix.PidfdGetfd(pidfd, int(int32(uint32(n.Data.Args[0]))), 0)
	if err != nil {
		return errnoOf(err)
	}
	defer unix.Close(sock)
	switch family := binary.NativeEndian.Uint16(addr); family {
	case unix.AF_UNIX:
		if len(addr) > 2 && addr[2] != 0 {
			return g.connectPath(int(n.Pid), sock, pathOf(addr[2:]))
		}
		return connectRaw(sock, addr)
	case unix.AF_INET, unix.AF_INET6, unix.AF_UNSPEC:
		return connectRaw(sock, addr)
	default:
		g.log.Info("ipcguard: connect refused", zap.Uint32("pid", n.Pid), zap.Uint16("family", family))
		return unix.EACCES
	}
}

// pidfdThread is PIDFD_THREAD (Linux 6.9): a pidfd for a thread that
// is not its process's leader.
const pidfdThread = unix.O_EXCL

// openThread returns a pidfd for thread tid (a notification names the
// calling thread, often not the leader in a threaded program): of the
// thread itself where the kernel allows it, else of its process, found
// from /proc/<tid>/status. Both share the descriptor table pidfd_getfd
// reads.
func openThread(tid int) (int, error) {
	fd, err := unix.PidfdOpen(tid, pidfdThread)
	if !errors.Is(err, unix.EINVAL) {
		return fd, err
	}
	if fd, err = unix.PidfdOpen(tid, 0); err == nil {
		return fd, nil
	}
	tgid, err := tgidOf(tid)
	if err != nil {
		return -1, err
	}
	return unix.PidfdOpen(tgid, 0)
}

// tgidOf reads thread tid's process id from /proc/<tid>/status.
func tgidOf(tid int) (int, error) {
	b, err := readProc("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, unix.ESRCH
}

// pathOf is sun_path up to its first NUL.
func pathOf(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// readMem reads len(buf) bytes at addr of process pid.
func readMem(pid int, addr uint64, buf []byte) error {
	local := []unix.Iovec{{Base: &buf[0], Len: uint64(len(buf))}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}}
	n, err := unix.ProcessVMReadv(pid, local, remote, 0)
	if err == nil && n != len(buf) {
		err = unix.EFAULT
	}
	return err
}

// connectRaw connects sock to the address bytes addr.
func connectRaw(sock int, addr []byte) unix.Errno {
	for {
		_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(sock), uintptr(unsafe.Pointer(&addr[0])), uintptr(len(addr)))
		if e != unix.EINTR {
			return e
		}
	}
}

// connectPath connects sock to the socket that path names in process
// pid's view of the filesystem (its root and, for a relative path, its
// working directory), if that socket is on the process's private /tmp.
// The path is resolved once, inside that root, to a pinned inode
// (openat2 O_PATH with RESOLVE_IN_ROOT, magic links refused); the check is
// made on that inode, and the connect goes to that same inode through
// /proc/self/fd. Nothing another process renames or replaces meanwhile
// can change what is connected.
func (g *Guard) connectPath(pid int, sock int, path string) unix.Errno {
	proc := "/proc/" + strconv.Itoa(pid)
	root, err := unix.Open(proc+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return errnoOf(err)
	}
	defer unix.Close(root)
	if path[0] != '/' {
		cwd, err := os.Readlink(proc + "/cwd")
		if err != nil || cwd == "" || cwd[0] != '/' {
			return unix.ENOENT
		}
		path = cwd + "/" + path
	}
	tmpDev, ok := g.privateTmp(root)
	pin, err := unix.Openat2(root, path, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return errnoOf(err)
	}
	defer unix.Close(pin)
	var st unix.Stat_t
	if err := unix.Fstat(pin, &st); err != nil {
		return errnoOf(err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return unix.ECONNREFUSED // what the kernel answers for a non-socket
	}
	if !ok || st.Dev != tmpDev {
		g.log.Info("ipcguard: connect refused", zap.Int("pid", pid), zap.String("path", path))
		return unix.EACCES
	}
	for {
		err := unix.Connect(sock, &unix.SockaddrUnix{Name: "/proc/self/fd/" + strconv.Itoa(pin)})
		if !errors.Is(err, unix.EINTR) {
			return errnoOf(err)
		}
	}
}

// privateTmp returns the device of /tmp under root when it is a tmpfs of
// its own (not the daemon's /tmp): the private /tmp bubblewrap made. ok is
// false otherwise, and then no path connect is allowed.
func (g *Guard) privateTmp(root int) (dev uint64, ok bool) {
	tmp, err := unix.Openat2(root, "/tmp", &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return 0, false
	}
	defer unix.Close(tmp)
	var st unix.Stat_t
	var fs unix.Statfs_t
	if unix.Fstat(tmp, &st) != nil || unix.Fstatfs(tmp, &fs) != nil {
		return 0, false
	}
	if fs.Type != unix.TMPFS_MAGIC || st.Dev == g.hostTmp {
		return 0, false
	}
	return st.Dev, true
}

// errnoOf is err's errno (EACCES when it carries none); nil is 0.
func errnoOf(err error) unix.Errno {
	if err == nil {
		return 0
	}
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return unix.EACCES
}
