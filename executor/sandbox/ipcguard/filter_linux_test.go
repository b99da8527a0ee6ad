package ipcguard

import (
	"encoding/binary"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// run interprets the filter's instructions (the few kinds program emits)
// on one seccomp_data, as the kernel would.
func run(t *testing.T, ins []unix.SockFilter, nr, arch uint32, args ...uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.LittleEndian.PutUint32(data[offNr:], nr)
	binary.LittleEndian.PutUint32(data[offArch:], arch)
	for i, a := range args {
		binary.LittleEndian.PutUint64(data[offArg0+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(ins); pc++ {
		in := ins[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = binary.LittleEndian.Uint32(data[in.K:])
		case unix.BPF_ALU | unix.BPF_AND | unix.BPF_K:
			acc &= in.K
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			taken := acc == in.K
			switch in.Code & 0xf0 {
			case unix.BPF_JGE:
				taken = acc >= in.K
			case unix.BPF_JSET:
				taken = acc&in.K != 0
			}
			if taken {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		default:
			t.Fatalf("instruction %d: unexpected code %#x", pc, in.Code)
		}
	}
	t.Fatal("the program ran off its end")
	return 0
}

// TestProgramDecisions checks the filter's answer for each call it cares
// about, and a few it must leave alone, on every ABI of this architecture.
func TestProgramDecisions(t *testing.T) {
	ins, err := program(arches, rules{sockets: true, files: true})
	if err != nil {
		t.Fatal(err)
	}
	eacces, enosys := retErrno(unix.EACCES), retErrno(unix.ENOSYS)
	for _, a := range arches {
		cases := []struct {
			name string
			nr   uint32
			args []uint64
			want uint32
		}{
			{"connect", a.connect, nil, retNotify},
			{"unix stream socket", a.socket, []uint64{unix.AF_UNIX, unix.SOCK_STREAM | unix.SOCK_CLOEXEC}, retAllow},
			{"unix seqpacket socket", a.socket, []uint64{unix.AF_UNIX, unix.SOCK_SEQPACKET}, retAllow},
			{"unix datagram socket", a.socket, []uint64{unix.AF_UNIX, unix.SOCK_DGRAM | unix.SOCK_NONBLOCK}, eacces},
			{"unix raw socket (a datagram one)", a.socket, []uint64{unix.AF_UNIX, unix.SOCK_RAW}, eacces},
			{"unix datagram socketpair", a.socketpair, []uint64{unix.AF_UNIX, unix.SOCK_DGRAM}, eacces},
			{"unix stream socketpair", a.socketpair, []uint64{unix.AF_UNIX, unix.SOCK_STREAM}, retAllow},
			{"vsock socket", a.socket, []uint64{unix.AF_VSOCK, unix.SOCK_STREAM}, eacces},
			{"udp socket", a.socket, []uint64{unix.AF_INET, unix.SOCK_DGRAM}, retAllow},
			{"io_uring_setup", a.ioUringSetup, nil, enosys},
			{"an unrelated call", 0, nil, retAllow},
			{"openat read-only", a.openat, []uint64{0, 0, unix.O_RDONLY | unix.O_CLOEXEC | unix.O_DIRECTORY}, retAllow},
			{"openat write-only", a.openat, []uint64{0, 0, unix.O_WRONLY}, retNotify},
			{"openat read-write", a.openat, []uint64{0, 0, unix.O_RDWR | unix.O_NONBLOCK}, retNotify},
			{"openat creating", a.openat, []uint64{0, 0, unix.O_CREAT}, retNotify},
			{"openat creating, truncating", a.openat, []uint64{0, 0, unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC}, retNotify},
			{"openat exclusive create", a.openat, []uint64{0, 0, unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_CLOEXEC}, retAllow},
			{"openat O_EXCL alone", a.openat, []uint64{0, 0, unix.O_WRONLY | unix.O_EXCL}, retNotify},
			{"openat truncating", a.openat, []uint64{0, 0, unix.O_TRUNC}, retNotify},
			{"openat O_TMPFILE", a.openat, []uint64{0, 0, unix.O_TMPFILE | unix.O_RDWR}, retNotify},
			{"openat2", a.openat2, nil, enosys},
			{"open_by_handle_at", a.openByHandleAt, nil, retErrno(unix.EPERM)},
			{"truncate", a.truncate, nil, retNotify},
			{"mknodat of a FIFO", a.mknodat, []uint64{0, 0, unix.S_IFIFO | 0o644}, retNotify},
			{"mknodat of a file", a.mknodat, []uint64{0, 0, unix.S_IFREG | 0o644}, retAllow},
		}
		type tc = struct {
			name string
			nr   uint32
			args []uint64
			want uint32
		}
		if a.open >= 0 {
			cases = append(cases, tc{"open read-only", uint32(a.open), []uint64{0, unix.O_RDONLY}, retAllow},
				tc{"open appending", uint32(a.open), []uint64{0, unix.O_WRONLY | unix.O_APPEND}, retNotify},
				tc{"open exclusive create", uint32(a.open), []uint64{0, unix.O_RDWR | unix.O_CREAT | unix.O_EXCL}, retAllow},
				tc{"creat", uint32(a.creat), nil, retNotify})
		}
		if a.truncate64 >= 0 {
			cases = append(cases, tc{"truncate64", uint32(a.truncate64), nil, retNotify})
		}
		if a.socketcall >= 0 {
			cases = append(cases, struct {
				name string
				nr   uint32
				args []uint64
				want uint32
			}{"socketcall", uint32(a.socketcall), nil, enosys})
		}
		if a.x32 {
			cases = append(cases, struct {
				name string
				nr   uint32
				args []uint64
				want uint32
			}{"an x32 call", x32Bit | 42, nil, enosys})
		}
		for _, c := range cases {
			t.Run(fmt.Sprintf("%#x/%s", a.audit, c.name), func(t *testing.T) {
				if got := run(t, ins, c.nr, a.audit, c.args...); got != c.want {
					t.Errorf("got %#x, want %#x", got, c.want)
				}
			})
		}
	}
	if got := run(t, ins, 0, 0x12345678); got != enosys {
		t.Errorf("an unknown ABI: got %#x, want ENOSYS", got)
	}
}

// TestProgramLinksOnly: the filter of Config.LinksOnly leaves sockets
// alone and still sends writing opens to the supervisor.
func TestProgramLinksOnly(t *testing.T) {
	ins, err := program(arches, rules{files: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range arches {
		for _, c := range []struct {
			name string
			nr   uint32
			args []uint64
			want uint32
		}{
			{"connect", a.connect, nil, retAllow},
			{"unix datagram socket", a.socket, []uint64{unix.AF_UNIX, unix.SOCK_DGRAM}, retAllow},
			{"openat write-only", a.openat, []uint64{0, 0, unix.O_WRONLY}, retNotify},
			{"openat read-only", a.openat, []uint64{0, 0, unix.O_RDONLY}, retAllow},
			{"io_uring_setup", a.ioUringSetup, nil, retErrno(unix.ENOSYS)},
		} {
			if got := run(t, ins, c.nr, a.audit, c.args...); got != c.want {
				t.Errorf("%#x/%s: got %#x, want %#x", a.audit, c.name, got, c.want)
			}
		}
	}
}
