package ipcguard

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// callKind is what a notified system call is.
type callKind int

const (
	callNone callKind = iota
	callConnect
	callOpen     // open(path, flags, mode)
	callOpenat   // openat(dirfd, path, flags, mode)
	callCreat    // creat(path, mode)
	callTruncate // truncate(path, length)
	callTrunc64  // truncate64(path, [pad,] low, high) of a 32-bit ABI
	callMknod    // mknod(path, mode, dev) of a FIFO
	callMknodat  // mknodat(dirfd, path, mode, dev) of a FIFO
)

// callKey is a system call of one ABI, as a notification names it.
type callKey struct {
	arch uint32
	nr   int32
}

// callTable maps the calls the filter notifies, per ABI, to their kinds.
func callTable(abis []abi) map[callKey]callKind {
	m := map[callKey]callKind{}
	for _, a := range abis {
		m[callKey{a.audit, int32(a.connect)}] = callConnect
		m[callKey{a.audit, int32(a.openat)}] = callOpenat
		m[callKey{a.audit, int32(a.truncate)}] = callTruncate
		m[callKey{a.audit, int32(a.mknodat)}] = callMknodat
		for nr, k := range map[int]callKind{a.open: callOpen, a.creat: callCreat, a.truncate64: callTrunc64, a.mknod: callMknod} {
			if nr >= 0 {
				m[callKey{a.audit, int32(nr)}] = k
			}
		}
	}
	return m
}

// abiOf is the ABI whose audit architecture is arch.
func abiOf(arch uint32) (abi, bool) {
	for _, a := range arches {
		if a.audit == arch {
			return a, true
		}
	}
	return abi{}, false
}

// caller is what the supervisor knows of the thread that made a call,
// from /proc/<tid>/status (ids as the daemon's user namespace sees them).
type caller struct {
	tid          int
	tgid         int // its process, as the daemon sees it
	fsuid, fsgid uint32
	groups       []uint32 // sorted
	capEff       uint64   // the effective capabilities
	umask        uint32
	nsTgid       int // its process and thread ids in its own pid namespace
	nsTid        int
	// partial: from callerInfo, umask and nsTgid, nsTid not read.
	partial bool
	// on is the worker answering the call (dispatch), nil on a goroutine.
	on *worker
}

// self is the daemon's own identity, as a caller's is compared with it
// (callerInfo).
type self struct {
	fsuid, fsgid uint32
	groups       []uint32 // sorted
}

// daemonSelf reads the daemon's identity; ok false where it cannot.
func daemonSelf() (self, bool) {
	gs, err := unix.Getgroups()
	if err != nil {
		return self{}, false
	}
	uid, gid := fsIDs()
	s := self{fsuid: uid, fsgid: gid}
	for _, g := range gs {
		s.groups = append(s.groups, uint32(g))
	}
	slices.Sort(s.groups)
	return s, true
}

// callerInfo is the caller of a notification from its pidfd's
// PIDFD_GET_INFO (Linux 6.13) and a capget(2), without a read of its
// /proc status, where it runs with the daemon's filesystem uid and gid:
// its groups are then the daemon's, since a sandboxed command cannot have
// changed them (setgroups(2) needs CAP_SETGID, which it never holds: the
// package's contract; bubblewrap also denies setgroups in the user
// namespace it makes), and it started with the daemon's (bubblewrap keeps
// its invoker's groups). Such a caller is partial: its umask and its
// namespace's ids are read from the status only where a call needs them
// (see needsStatus). ok is false where the kernel has no such ioctl or the
// ids differ: the caller is then read whole (readCaller).
func callerInfo(pidfd, tid int, me self) (*caller, bool) {
	info := unix.PidfdInfo{Mask: unix.PIDFD_INFO_CREDS}
	if unix.IoctlPidfdInfo(pidfd, &info) != nil || info.Mask&unix.PIDFD_INFO_CREDS == 0 ||
		info.Fsuid != me.fsuid || info.Fsgid != me.fsgid {
		return nil, false
	}
	return &caller{tid: tid, tgid: int(info.Tgid), fsuid: info.Fsuid, fsgid: info.Fsgid, groups: me.groups,
		capEff: effectiveCaps(tid), umask: 0o022, partial: true}, true
}

// identity is the part of the caller a worker thread takes on: an open
// made by a worker with the same identity is one the caller could make.
func (c *caller) identity() string {
	var b strings.Builder
	b.WriteString(strconv.FormatUint(uint64(c.fsuid), 10) + ":" + strconv.FormatUint(uint64(c.fsgid), 10) + ":")
	for _, g := range c.groups {
		b.WriteString(strconv.FormatUint(uint64(g), 10) + ",")
	}
	return b.String()
}

// effectiveCaps returns thread tid's effective capabilities (as its own
// user namespace grants them), or 0 when they cannot be read.
func effectiveCaps(tid int) uint64 {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3, Pid: int32(tid)}
	var data [2]unix.CapUserData
	if unix.Capget(&hdr, &data[0]) != nil {
		return 0
	}
	return uint64(data[0].Effective) | uint64(data[1].Effective)<<32
}

// statusReads counts readCaller's reads (tests).
var statusReads atomic.Int64

// readCaller reads thread tid's status.
func readCaller(tid int) (*caller, error) {
	statusReads.Add(1)
	b, err := readProc("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return nil, err
	}
	c := &caller{tid: tid, umask: 0o022}
	seen := 0
	for line := range strings.Lines(string(b)) {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(val)
		switch key {
		case "Uid":
			seen++
			c.fsuid = field(f, 3)
		case "Gid":
			seen++
			c.fsgid = field(f, 3)
		case "Groups":
			for _, s := range f {
				c.groups = append(c.groups, field([]string{s}, 0))
			}
			slices.Sort(c.groups)
		case "CapEff":
			seen++
			if len(f) == 1 {
				c.capEff, _ = strconv.ParseUint(f[0], 16, 64)
			}
		case "Umask":
			if len(f) == 1 {
				u, _ := strconv.ParseUint(f[0], 8, 32)
				c.umask = uint32(u)
			}
		case "Tgid":
			c.tgid = int(field(f, 0))
		case "NStgid":
			seen++
			c.nsTgid = int(field(f, len(f)-1))
		case "NSpid":
			seen++
			c.nsTid = int(field(f, len(f)-1))
		}
	}
	if seen != 5 {
		return nil, errors.New("ipcguard: unreadable status of " + strconv.Itoa(tid))
	}
	return c, nil
}

// field is f[i] as a number; an id that does not parse is the overflow
// id, which owns nothing.
func field(f []string, i int) uint32 {
	if i < 0 || i >= len(f) {
		return 65534
	}
	v, err := strconv.ParseUint(f[i], 10, 32)
	if err != nil {
		return 65534
	}
	return uint32(v)
}

// readProc reads a small /proc file with three system calls (os.ReadFile
// makes nine: its open tries the poller, then an fstat and a read past the
// end), a page at a time until the end.
func readProc(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	b := make([]byte, 0, 4096)
	for {
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		b = b[:len(b)+n]
		if n == 0 || len(b) < cap(b) {
			return b, nil // procfs renders the file in one read when it fits
		}
		b = append(b, make([]byte, 4096)...)[:len(b)]
	}
}
