package ipcguard

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The client is this test binary run inside the sandbox (or, at level off,
// plainly): it tries each way out and each ordinary use, and prints one JSON
// object, name → "ok" or the error. The host side judges the ways out by
// what its listeners received; the ordinary uses are judged here.

// clientEnv is what the test tells the client.
type clientEnv struct {
	HomeSock  string // a path socket under the fake $HOME
	HomeDgram string // a datagram path socket under the fake $HOME
	WsSock    string // relative to the workspace (the client's cwd)
	Abstract  string // an abstract name the host listens on
	Tmp       string // where the client makes its own sockets ("/tmp/…")
	Race      int    // connect attempts of the race
	// Landing makes the race go on (up to 5 s) until a connect reached
	// the target: at level off, where the race is the control.
	Landing bool
}

func clientMain() int {
	var env clientEnv
	if err := json.Unmarshal([]byte(os.Getenv(clientEnvVar)), &env); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := os.MkdirAll(env.Tmp, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	link := filepath.Join(env.Tmp, "link.sock")
	res := map[string]string{
		"home":       result(dialSend(env.HomeSock)),
		"ws":         result(dialSend(env.WsSock)),
		"link":       result(os.Symlink(env.HomeSock, link), dialSend(link)),
		"dgram":      result(dgramSend(env.HomeDgram)),
		"abstract":   result(dialSend("@" + env.Abstract)),
		"tmp":        result(tmpEcho(filepath.Join(env.Tmp, "srv.sock"), "")),
		"tmprel":     result(tmpEcho(filepath.Join(env.Tmp, "rel.sock"), env.Tmp)),
		"socketpair": result(socketpairEcho()),
		"loopback":   result(loopbackEcho()),
	}
	res["bypass"] = result(bypass(env.HomeSock))
	hits, err := race(filepath.Join(env.Tmp, "race.sock"), env.HomeSock, env.Race, env.Landing)
	res["race"], res["racehits"] = result(err), strconv.Itoa(hits)
	b, _ := json.Marshal(res)
	fmt.Println(string(b))
	return 0
}

// result is "ok" or the first error.
func result(errs ...error) string {
	for _, err := range errs {
		if err != nil {
			return err.Error()
		}
	}
	return "ok"
}

const payload = "POST /containers/create\n"

// dialSend connects to a stream socket and writes the payload.
func dialSend(addr string) error {
	c, err := net.DialTimeout("unix", addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte(payload))
	return err
}

// dgramSend sends the payload to a datagram socket from a datagram socket
// of its own.
func dgramSend(path string) error {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	return unix.Sendto(fd, []byte(payload), 0, &unix.SockaddrUnix{Name: path})
}

// tmpEcho runs a server on path and a client that connects to it (by a
// path relative to dir when dir is set) and gets its bytes echoed.
func tmpEcho(path, dir string) error {
	l, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	defer l.Close()
	go echoOnce(l)
	addr := path
	if dir != "" {
		if err := os.Chdir(dir); err != nil {
			return err
		}
		addr = filepath.Base(path)
	}
	c, err := net.DialTimeout("unix", addr, 2*time.Second)
	if err != nil {
		return err
	}
	return roundTrip(c)
}

// loopbackEcho is tmpEcho over TCP on the sandbox's own loopback.
func loopbackEcho() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer l.Close()
	go echoOnce(l)
	c, err := net.DialTimeout("tcp", l.Addr().String(), 2*time.Second)
	if err != nil {
		return err
	}
	return roundTrip(c)
}

func echoOnce(l net.Listener) {
	c, err := l.Accept()
	if err != nil {
		return
	}
	defer c.Close()
	buf := make([]byte, 64)
	n, _ := c.Read(buf)
	_, _ = c.Write(buf[:n])
}

func roundTrip(c net.Conn) error {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("ping")); err != nil {
		return err
	}
	buf := make([]byte, 4)
	if _, err := c.Read(buf); err != nil {
		return err
	}
	if string(buf) != "ping" {
		return fmt.Errorf("echo %q", buf)
	}
	return nil
}

func socketpairEcho() error {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return err
	}
	a, b := os.NewFile(uintptr(fds[0]), "a"), os.NewFile(uintptr(fds[1]), "b")
	defer a.Close()
	defer b.Close()
	if _, err := a.Write([]byte("ping")); err != nil {
		return err
	}
	buf := make([]byte, 4)
	if _, err := b.Read(buf); err != nil || string(buf) != "ping" {
		return fmt.Errorf("socketpair: %q %v", buf, err)
	}
	return nil
}

// race connects n times (or more) with one address buffer that another goroutine
// flips, all along, between a socket on /tmp (allowed) and target: a
// supervisor that checked the address and then let the kernel read it
// again would be fooled now and then. Every connect that lands writes the
// payload; the host counts what reaches target.
func race(allowed, target string, n int, landing bool) (hits int, err error) {
	l, err := net.Listen("unix", allowed)
	if err != nil {
		return 0, err
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	var a, b unix.RawSockaddrUnix
	a.Family, b.Family = unix.AF_UNIX, unix.AF_UNIX
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&a.Path[0])), len(a.Path)), allowed)
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&b.Path[0])), len(b.Path)), target)
	buf := a
	var stop atomic.Bool
	running := make(chan struct{})
	go func() {
		flip(&buf, &a, &b)
		close(running)
		for !stop.Load() {
			flip(&buf, &a, &b)
		}
	}()
	<-running
	defer stop.Store(true)
	// At least n connects and 300 ms (a loaded machine may keep the
	// flipping thread off the CPU for milliseconds at a time); when
	// landing, on until one reached target.
	start := time.Now()
	more := func(i int) bool {
		if i < n || time.Since(start) < 300*time.Millisecond {
			return true
		}
		return landing && hits == 0 && time.Since(start) < 5*time.Second
	}
	for i := 0; more(i); i++ {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return hits, err
		}
		_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&buf)), unsafe.Sizeof(buf))
		if e == 0 {
			if peer, err := unix.Getpeername(fd); err == nil {
				if u, ok := peer.(*unix.SockaddrUnix); ok && u.Name == target {
					hits++
				}
			}
			_, _ = unix.Write(fd, []byte(payload))
		}
		unix.Close(fd)
	}
	return hits, nil
}

// flip overwrites buf with a, then with b, holding each a moment (so
// about half the connects see b whole when nothing guards them).
func flip(buf, a, b *unix.RawSockaddrUnix) {
	for _, src := range []*unix.RawSockaddrUnix{a, b} {
		*buf = *src
		for t := time.Now(); time.Since(t) < 20*time.Microsecond; {
		}
	}
}

// parseResults reads the client's JSON line from its output.
func parseResults(out string) (map[string]string, error) {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "{") {
			var m map[string]string
			err := json.Unmarshal([]byte(line), &m)
			return m, err
		}
	}
	return nil, fmt.Errorf("no result line in %q", out)
}

// rawConnect connects a blocking TCP socket to addr with connect(2) on the
// calling thread (net.Dial would hand the call to another thread).
func rawConnect(addr *net.TCPAddr) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	sa := &unix.SockaddrInet4{Port: addr.Port}
	copy(sa.Addr[:], addr.IP.To4())
	return unix.Connect(fd, sa)
}

// bypass tries to take the guard's notifications: it loads a notifying
// filter of its own (the newest filter's listener gets a notification
// both return) on a locked thread, answers every notification with
// CONTINUE (let the kernel do the call), and connects to target from that
// thread.
func bypass(target string) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		fd, err := install(rules{sockets: true, files: true})
		if err != nil {
			errc <- err
			return
		}
		go func() {
			for {
				var n notif
				if ioctl(fd, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&n)) != nil {
					return
				}
				resp := notifResp{ID: n.ID, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
				_ = ioctl(fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp))
			}
		}()
		s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			errc <- err
			return
		}
		defer unix.Close(s)
		if err := unix.Connect(s, &unix.SockaddrUnix{Name: target}); err != nil {
			errc <- fmt.Errorf("connect: %w", err)
			return
		}
		_, err = unix.Write(s, []byte(payload))
		errc <- err
	}()
	return <-errc
}
