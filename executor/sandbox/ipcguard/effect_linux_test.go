package ipcguard

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// ways are the ways out, by the host listener that must receive nothing.
var ways = []string{"home", "ws", "dgram", "abstract"}

// ordinary are the client's own uses that must keep working.
var ordinary = []string{"tmp", "tmprel", "socketpair", "loopback"}

// requireTools skips (or fails under CI=true) without bubblewrap, or
// without setpriv when uid is set.
func requireTools(t testing.TB, uid int) {
	t.Helper()
	need := []string{"bwrap"}
	if uid >= 0 {
		need = append(need, "setpriv")
		if os.Geteuid() != 0 {
			skipOrFail(t, "running as another user needs root")
		}
	}
	for _, tool := range need {
		if _, err := exec.LookPath(tool); err != nil {
			skipOrFail(t, tool+" is not installed")
		}
	}
}

func skipOrFail(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true: %s", why)
	}
	t.Skip(why)
}

// users are the users the supervisor and the sandbox run as: this
// process's (root in CI) and an unprivileged one.
func users() map[string]int {
	return map[string]int{"self": -1, "unprivileged": testUID}
}

// TestWaysOutLandUnguarded is the control: at level off every way out
// reaches its host listener, the race included.
func TestWaysOutLandUnguarded(t *testing.T) {
	for name, uid := range users() {
		t.Run(name, func(t *testing.T) {
			requireTools(t, uid)
			h := newHost(t, uid)
			res := h.runClient(t, uid, false)
			for _, w := range append(ways, "link", "bypass") {
				if res[w] != "ok" {
					t.Errorf("%s: the client failed at level off: %s", w, res[w])
				}
			}
			for _, w := range ways {
				if len(h.received(w)) == 0 {
					t.Errorf("%s: the host listener received nothing at level off", w)
				}
			}
			if n := len(h.received("home")); n < 4 {
				t.Errorf("home received %d connections at level off; want the direct one, the link's, the bypass's and the race's", n)
			}
		})
	}
}

// TestWaysOutBlockedGuarded: inside the guarded sandbox no host listener
// receives a connection or a byte (a path socket under $HOME, the
// workspace's fsmonitor socket by a relative path, a symlink from /tmp to
// the $HOME socket, a datagram, an abstract socket, and 300 or more connects (300 ms) whose
// address another thread flips between /tmp and $HOME, a notifying filter
// of the command's own answering CONTINUE), while a socket
// server and client in /tmp, a relative /tmp path, a socketpair and
// loopback TCP keep working.
func TestWaysOutBlockedGuarded(t *testing.T) {
	for name, uid := range users() {
		t.Run(name, func(t *testing.T) {
			requireTools(t, uid)
			h := newHost(t, uid)
			res := h.runClient(t, uid, true)
			for _, w := range ways {
				if got := h.received(w); len(got) > 0 {
					t.Errorf("%s: the host listener received %d, the first: %s", w, len(got), got[0])
				}
			}
			for _, w := range []string{"home", "ws", "link"} {
				if !strings.Contains(res[w], "permission denied") {
					t.Errorf("%s: want permission denied, got %s", w, res[w])
				}
			}
			if !strings.Contains(res["dgram"], "socket: permission denied") {
				t.Errorf("dgram: want the datagram socket refused, got %s", res["dgram"])
			}
			// The kernel gives a notification to one listener only, and lets a
			// process below a listening filter install no other (EBUSY).
			if !strings.Contains(res["bypass"], "device or resource busy") {
				t.Errorf("bypass: want a second notifying filter refused, got %s", res["bypass"])
			}
			if res["racehits"] != "0" {
				t.Errorf("race: %s connects reached $HOME's socket", res["racehits"])
			}
			for _, w := range append(ordinary, "race") {
				if res[w] != "ok" {
					t.Errorf("%s: ordinary use failed in the sandbox: %s", w, res[w])
				}
			}
		})
	}
}
