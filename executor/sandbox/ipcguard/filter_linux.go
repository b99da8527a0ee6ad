package ipcguard

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rules are the filter's two halves: the socket rules and the file rules.
type rules struct{ sockets, files bool }

// abi is one syscall ABI's numbers; socketcall, open, creat and
// truncate64 are -1 where it has none.
type abi struct {
	audit                                     uint32
	socket, socketpair, connect, ioUringSetup uint32
	socketcall                                int
	x32                                       bool // refuse x32 calls (amd64's native ABI)
	// The calls that open or truncate by path (open_linux.go).
	openat, openat2, truncate, openByHandleAt uint32
	open, creat, truncate64                   int
	mknodat                                   uint32
	mknod                                     int
	// trunc64Low is the argument holding truncate64's length, low half
	// first (after a pad register on 32-bit ARM).
	trunc64Low int
	compat     bool // a 32-bit ABI: pointers and lengths are 32 bits
}

// writeFlags are the open flags that make an open a writing one (or a
// creating one): an open with none of them never leaves the kernel.
// O_TMPFILE needs O_WRONLY or O_RDWR. The four have the same values on
// every architecture Linux supports here.
const writeFlags = unix.O_WRONLY | unix.O_RDWR | unix.O_CREAT | unix.O_TRUNC

// exclusive are the flags of an exclusive create, which the kernel makes
// only where the name is free (a symlink there included): a new file,
// with one link, which is no FIFO, made through the caller's own mounts
// with its own credentials. It never leaves the kernel: the supervisor
// would decide nothing the kernel does not (git makes every object and
// lock file so).
const exclusive = unix.O_CREAT | unix.O_EXCL

// seccomp_data offsets (little-endian: an argument's low half comes first).
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
	offArg1 = 24
	offArg2 = 32
)

// x32Bit marks an x32 syscall number on amd64.
const x32Bit = 0x40000000

// Results of the filter.
const (
	retAllow  = unix.SECCOMP_RET_ALLOW
	retNotify = unix.SECCOMP_RET_USER_NOTIF
)

func retErrno(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }

// prog is a classic BPF program under construction, with forward jumps to
// labels resolved by build.
type prog struct {
	ins    []unix.SockFilter
	labels map[string]int
	fixes  []fix
}

// fix is a conditional jump whose targets are labels ("" = next).
type fix struct {
	at     int
	jt, jf string
}

func (p *prog) op(code uint16, k uint32) { p.ins = append(p.ins, unix.SockFilter{Code: code, K: k}) }
func (p *prog) load(off uint32)          { p.op(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, off) }
func (p *prog) ret(k uint32)             { p.op(unix.BPF_RET|unix.BPF_K, k) }
func (p *prog) label(name string)        { p.labels[name] = len(p.ins) }

// jump adds `if A <cond> k goto jt else goto jf`.
func (p *prog) jump(cond uint16, k uint32, jt, jf string) {
	p.fixes = append(p.fixes, fix{at: len(p.ins), jt: jt, jf: jf})
	p.op(unix.BPF_JMP|cond|unix.BPF_K, k)
}

func (p *prog) build() ([]unix.SockFilter, error) {
	for _, f := range p.fixes {
		for _, t := range []struct {
			name string
			dst  *uint8
		}{{f.jt, &p.ins[f.at].Jt}, {f.jf, &p.ins[f.at].Jf}} {
			if t.name == "" {
				continue
			}
			to, ok := p.labels[t.name]
			d := to - f.at - 1
			if !ok || d < 0 || d > 255 {
				return nil, fmt.Errorf("ipcguard: bad jump to %q", t.name)
			}
			*t.dst = uint8(d)
		}
	}
	return p.ins, nil
}

// program is the filter: per ABI, connect(2) goes to the supervisor, and
// so do the calls that may open a file for writing (openCalls);
// socket(2) and socketpair(2) of AF_UNIX types other than SOCK_STREAM
// and SOCK_SEQPACKET (a datagram socket can send to any path with
// sendto/sendmsg, which the filter cannot see) and of AF_VSOCK (not
// confined by a network namespace) fail with EACCES; io_uring_setup(2)
// (whose requests bypass seccomp) and socketcall(2) (whose arguments it
// cannot see) fail with ENOSYS; and so does every call of an ABI not
// listed (x32 included). Everything else is allowed.
//
// r chooses the rules: without sockets (Config.LinksOnly) connect(2),
// socket(2), socketpair(2) and socketcall(2) are allowed; without files
// (a benchmark's baseline) every open and truncate is.
func program(abis []abi, r rules) ([]unix.SockFilter, error) {
	p := &prog{labels: map[string]int{}}
	p.load(offArch)
	for i, a := range abis {
		next := fmt.Sprintf("arch%d", i+1)
		p.jump(unix.BPF_JEQ, a.audit, "", next)
		p.load(offNr)
		if a.x32 {
			p.jump(unix.BPF_JGE, x32Bit, "nosys", "")
		}
		if r.sockets {
			p.jump(unix.BPF_JEQ, a.connect, "notify", "")
			p.jump(unix.BPF_JEQ, a.socket, "sock", "")
			p.jump(unix.BPF_JEQ, a.socketpair, "sock", "")
			if a.socketcall >= 0 {
				p.jump(unix.BPF_JEQ, uint32(a.socketcall), "nosys", "")
			}
		}
		p.jump(unix.BPF_JEQ, a.ioUringSetup, "nosys", "")
		if r.files {
			p.openCalls(a)
		}
		p.ret(retAllow)
		p.label(next)
	}
	p.ret(retErrno(unix.ENOSYS)) // an ABI not listed
	for _, f := range []struct {
		label string
		off   uint32
	}{{"flags1", offArg1}, {"flags2", offArg2}} {
		p.label(f.label)
		p.load(f.off)
		p.op(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, exclusive)
		p.jump(unix.BPF_JEQ, exclusive, "allow", "")
		p.load(f.off)
		p.jump(unix.BPF_JSET, writeFlags, "notify", "allow")
	}
	p.label("fifo1")
	p.load(offArg1)
	p.op(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, unix.S_IFMT)
	p.jump(unix.BPF_JEQ, unix.S_IFIFO, "notify", "allow")
	p.label("fifo2")
	p.load(offArg2)
	p.op(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, unix.S_IFMT)
	p.jump(unix.BPF_JEQ, unix.S_IFIFO, "notify", "allow")
	p.label("eperm")
	p.ret(retErrno(unix.EPERM))
	p.label("nosys")
	p.ret(retErrno(unix.ENOSYS))
	p.label("notify")
	p.ret(retNotify)
	p.label("sock")
	p.load(offArg0)
	p.jump(unix.BPF_JEQ, unix.AF_VSOCK, "eacces", "")
	p.jump(unix.BPF_JEQ, unix.AF_UNIX, "", "allow")
	p.load(offArg1)
	p.op(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, 0xf) // SOCK_TYPE_MASK
	p.jump(unix.BPF_JEQ, unix.SOCK_STREAM, "allow", "")
	p.jump(unix.BPF_JEQ, unix.SOCK_SEQPACKET, "allow", "eacces")
	p.label("eacces")
	p.ret(retErrno(unix.EACCES))
	p.label("allow")
	p.ret(retAllow)
	return p.build()
}

// openCalls adds a's calls that open or truncate by path: creat(2),
// truncate(2) and truncate64(2) go to the supervisor; open(2) and
// openat(2) go there when their flags ask for writing or creating, but not
// for an exclusive create (the flags are in a register, so a read-only
// open or an exclusive create never leaves the kernel);
// openat2(2), whose flags are behind a pointer the caller may rewrite after
// a check, fails with ENOSYS (libc and Go fall back to openat);
// open_by_handle_at(2) fails with EPERM (it opens by inode, below any
// path, and needs a capability a sandbox has not anyway); mknod(2) and
// mknodat(2) of a FIFO go to the supervisor (which records the FIFOs
// sandboxes make: those may be written).
func (p *prog) openCalls(a abi) {
	for _, nr := range []int{a.creat, int(a.truncate), a.truncate64} {
		if nr >= 0 {
			p.jump(unix.BPF_JEQ, uint32(nr), "notify", "")
		}
	}
	if a.open >= 0 {
		p.jump(unix.BPF_JEQ, uint32(a.open), "flags1", "")
	}
	p.jump(unix.BPF_JEQ, a.openat, "flags2", "")
	if a.mknod >= 0 {
		p.jump(unix.BPF_JEQ, uint32(a.mknod), "fifo1", "")
	}
	p.jump(unix.BPF_JEQ, a.mknodat, "fifo2", "")
	p.jump(unix.BPF_JEQ, a.openat2, "nosys", "")
	p.jump(unix.BPF_JEQ, a.openByHandleAt, "eperm", "")
}

// install loads the filter on the calling thread (only) and returns the
// listener of its notifications. The thread gets no_new_privs first (a
// filter needs it without CAP_SYS_ADMIN; bubblewrap sets it anyway).
func install(r rules) (int, error) {
	if len(arches) == 0 {
		return -1, fmt.Errorf("ipcguard: no syscall table for %s", runtime.GOARCH)
	}
	ins, err := program(arches, r)
	if err != nil {
		return -1, err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return -1, fmt.Errorf("ipcguard: no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(ins)), Filter: &ins[0]}
	// WAIT_KILLABLE_RECV (Linux 5.19): once the supervisor holds a
	// notification, only a fatal signal interrupts the call, so a connect
	// made on the caller's behalf is never one the caller gave up on.
	flags := []uintptr{unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER}
	for _, fl := range flags {
		fd, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, fl, uintptr(unsafe.Pointer(&fprog)))
		runtime.KeepAlive(ins)
		if errno == 0 {
			return int(fd), nil
		}
		if !errors.Is(errno, unix.EINVAL) {
			return -1, fmt.Errorf("ipcguard: seccomp filter: %w", errno)
		}
	}
	return -1, errors.New("ipcguard: seccomp filter: this kernel has no user notification (Linux 5.0)")
}
