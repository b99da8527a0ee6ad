package ssh

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"strconv"
	"strings"
)

// Target is where commands run: ssh://[user@]host[:port][/path].
type Target struct {
	// User is the remote account; empty means the local user's name.
	User string
	// Host is a host name or an IP address (without brackets).
	Host string
	// Port is the TCP port; 0 means 22.
	Port int
	// Dir, when set, is the absolute remote directory every session's
	// commands run in (the editor's project directory maps to it); empty
	// means a session's own directory, the same path on both machines.
	Dir string
}

// ErrTarget is wrapped by every ParseTarget error.
var ErrTarget = errors.New("invalid ssh executor address")

// ParseTarget parses "ssh://[user@]host[:port][/path]". A password in the
// address, a query, a fragment, a relative or unclean path and a port out of
// range are errors wrapping ErrTarget.
func ParseTarget(s string) (Target, error) {
	fail := func(format string, args ...any) (Target, error) {
		return Target{}, fmt.Errorf("%w %q: %s (want ssh://[user@]host[:port][/path])", ErrTarget, s, fmt.Sprintf(format, args...))
	}
	if !strings.HasPrefix(s, "ssh://") {
		return fail("not an ssh:// address")
	}
	u, err := url.Parse(s)
	if err != nil {
		return fail("%v", errors.Unwrap(err))
	}
	if u.Opaque != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(s, "#") {
		return fail("a query or fragment is not allowed")
	}
	var t Target
	if u.User != nil {
		if _, has := u.User.Password(); has {
			return fail("a password is not allowed in the address; use ssh-agent or --ssh-identity")
		}
		t.User = u.User.Username()
		if t.User == "" {
			return fail("empty user name")
		}
	}
	t.Host = u.Hostname()
	if t.Host == "" {
		return fail("no host")
	}
	if strings.ContainsAny(t.Host, " \t\r\n/\\") {
		return fail("bad host name")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return fail("port %q out of range", p)
		}
		t.Port = n
	} else if strings.HasSuffix(u.Host, ":") {
		return fail("empty port")
	}
	if u.Path != "" && u.Path != "/" {
		if path.Clean(u.Path) != u.Path {
			return fail("path %q is not clean", u.Path)
		}
		t.Dir = u.Path
	}
	return t, nil
}

// port is the TCP port, 22 by default.
func (t Target) port() int {
	if t.Port == 0 {
		return 22
	}
	return t.Port
}

// Addr is "host:port" for dialing (IPv6 hosts in brackets).
func (t Target) Addr() string { return net.JoinHostPort(t.Host, strconv.Itoa(t.port())) }

// String is the target as an address: ssh://user@host:port/dir, leaving
// out what was not given.
func (t Target) String() string {
	u := url.URL{Scheme: "ssh", Host: t.Host, Path: t.Dir}
	if strings.Contains(t.Host, ":") {
		u.Host = "[" + t.Host + "]"
	}
	if t.Port != 0 {
		u.Host = net.JoinHostPort(t.Host, strconv.Itoa(t.Port))
	}
	if t.User != "" {
		u.User = url.User(t.User)
	}
	return u.String()
}

// Location names dir on the host: "host:/path" (scp's notation).
func (t Target) Location(dir string) string {
	host := t.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return host + ":" + dir
}
