package ssh

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/crypto/ssh"

	"github.com/dsh-acp/dsh-acp/executor/engine"
	"github.com/dsh-acp/dsh-acp/executor/sandbox"
)

// ErrConnectionLost is matched (errors.Is) by *LostError.
var ErrConnectionLost = errors.New("connection to the host lost")

// LostError ends a command whose connection to the host broke while it ran:
// its processes on the host were ended when their session closed, and its
// result is unknown.
type LostError struct {
	Addr   string
	Reason error
}

func (e *LostError) Error() string {
	return fmt.Sprintf("lost the connection to %s while the command ran (%v); the host stops its processes, and whether it finished is unknown",
		e.Addr, e.Reason)
}

func (e *LostError) Is(target error) bool { return target == ErrConnectionLost }
func (e *LostError) Unwrap() error        { return e.Reason }

// ErrClosed is returned after the spawner was closed.
var ErrClosed = errors.New("ssh spawner is closed")

// dialer keeps the one connection to the host, dialing it on demand.
type dialer struct {
	target   Target
	user     string
	auth     *auth
	hosts    *hostKeys
	stateDir string // RemoteStateDir, or "" for the remote default
	allow    []string
	secrets  []string
	timing   timing
	log      *zap.Logger
	// execBash makes every channel start bash from the login shell even
	// when the login shell is bash (tests of the non-bash path).
	execBash bool

	dialMu sync.Mutex // one dial at a time
	mu     sync.Mutex
	cur    *conn
	closed bool
}

// timing holds the connection's clocks.
type timing struct {
	dial, start, keepAlive, keepAliveTimeout, grace time.Duration
	sweepAge                                        time.Duration
}

// conn is one live connection and what the hello learned about the host.
type conn struct {
	d       *dialer
	client  *ssh.Client
	cmdline string // the exec request of every channel through the reader
	direct  bool   // the login shell runs the reader itself (it is bash)

	unset    []string // remote login variables the scrub drops (bash names)
	envUnset []string // the same, names bash cannot unset
	spillDir string   // remote, absolute, 0700
	sup      *supervisor

	dead chan struct{} // closed once the connection is gone

	mu      sync.Mutex
	deadErr error // why it is gone (or going)
}

// setReason records why the connection ends, unless a reason is known.
func (c *conn) setReason(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deadErr == nil {
		c.deadErr = err
	}
}

// reason is why the connection ended.
func (c *conn) reason() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deadErr
}

// get returns the live connection, dialing a new one when there is none
// (the first command, or the first after the connection was lost).
func (d *dialer) get(ctx context.Context) (*conn, error) {
	if c := d.live(); c != nil {
		return c, nil
	}
	d.dialMu.Lock()
	defer d.dialMu.Unlock()
	if c := d.live(); c != nil {
		return c, nil
	}
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	c, err := d.dial(ctx)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		c.client.Close()
		return nil, ErrClosed
	}
	d.cur = c
	d.mu.Unlock()
	return c, nil
}

// live is the current connection unless it is gone.
func (d *dialer) live() *conn {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cur == nil {
		return nil
	}
	select {
	case <-d.cur.dead:
		d.cur = nil
		return nil
	default:
		return d.cur
	}
}

// close closes the connection; later gets fail with ErrClosed.
func (d *dialer) close() {
	d.mu.Lock()
	d.closed = true
	c := d.cur
	d.cur = nil
	d.mu.Unlock()
	if c != nil {
		c.client.Close()
		<-c.dead
	}
}

// dial connects, authenticates, checks the host key and says hello.
func (d *dialer) dial(ctx context.Context) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timing.dial)
	defer cancel()
	addr := d.target.Addr()
	methods, release, err := d.auth.methods()
	if err != nil {
		return nil, fmt.Errorf("ssh %s: %w", addr, err)
	}
	defer release()
	var nd net.Dialer
	nc, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ssh: cannot reach %s: %w", addr, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	cc, chans, reqs, err := ssh.NewClientConn(nc, addr, &ssh.ClientConfig{
		User:              d.user,
		Auth:              methods,
		HostKeyCallback:   d.hosts.check,
		HostKeyAlgorithms: d.hosts.algorithms(addr),
		ClientVersion:     "SSH-2.0-dsh-acp",
	})
	stop()
	if err != nil {
		nc.Close()
		var hk *HostKeyError
		if errors.As(err, &hk) {
			return nil, hk
		}
		if strings.Contains(err.Error(), "unable to authenticate") {
			return nil, fmt.Errorf("ssh %s@%s: the host refused every key offered (%w); check that your public key is in the host's ~/.ssh/authorized_keys and loaded in ssh-agent (ssh-add -l), or pass --ssh-identity FILE", d.user, addr, err)
		}
		return nil, fmt.Errorf("ssh %s: %w", addr, err)
	}
	_ = nc.SetDeadline(time.Time{})
	c := &conn{d: d, client: ssh.NewClient(cc, chans, reqs), dead: make(chan struct{})}
	go c.watch()
	if err := c.hello(ctx); err != nil {
		c.client.Close()
		return nil, fmt.Errorf("ssh %s: %w", addr, err)
	}
	go c.keepAlive()
	d.log.Info("ssh connected", zap.String("host", addr), zap.String("user", d.user))
	return c, nil
}

// watch closes dead when the connection ends.
func (c *conn) watch() {
	err := c.client.Wait()
	if err == nil || errors.Is(err, io.EOF) {
		err = errors.New("the host closed the connection")
	}
	c.setReason(err)
	close(c.dead)
}

// keepAlive sends a keep-alive every timing.keepAlive and closes the
// connection when one is not answered within timing.keepAliveTimeout, so
// a silent network is noticed within their sum.
func (c *conn) keepAlive() {
	t := time.NewTicker(c.d.timing.keepAlive)
	defer t.Stop()
	for {
		select {
		case <-c.dead:
			return
		case <-t.C:
		}
		answered := make(chan struct{})
		go func() {
			_, _, _ = c.client.SendRequest("keepalive@openssh.com", true, nil)
			close(answered)
		}()
		timer := time.NewTimer(c.d.timing.keepAliveTimeout)
		select {
		case <-answered:
			timer.Stop()
		case <-c.dead:
			timer.Stop()
			return
		case <-timer.C:
			c.setReason(fmt.Errorf("no answer to keep-alives for %v", c.d.timing.keepAliveTimeout))
			c.d.log.Warn("ssh keep-alive unanswered; closing the connection", zap.String("host", c.d.target.Addr()))
			c.client.Close()
			return
		}
	}
}

// lost is the error of a command whose connection went away.
func (c *conn) lost() error { return &LostError{Addr: c.d.target.Addr(), Reason: c.reason()} }

// isDead reports whether the connection is gone, waiting up to d for it
// to be noticed.
func (c *conn) isDead(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.dead:
		return true
	case <-t.C:
		return false
	}
}

// hello learns how to run commands on the host: whether the login shell
// is a bash that can run the reader, the login environment (to scrub it as
// a local one is), and the spill directory (created 0700, old files swept).
func (c *conn) hello(ctx context.Context) error {
	loginBash, err := c.probe(ctx, probeLine)
	if err != nil {
		return err
	}
	if !loginBash {
		ok, err := c.probe(ctx, probeBash)
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("the host has no bash 4.1 or newer on its PATH (dsh-acp runs commands with bash)")
		}
	}
	c.direct = loginBash && !c.d.execBash
	c.cmdline = commandLine(c.direct)
	state := `case ${XDG_STATE_HOME-} in /*) __d=$XDG_STATE_HOME/dsh-acp;; *) __d=$HOME/.local/state/dsh-acp;; esac`
	if c.d.stateDir != "" {
		state = "__d=" + sandbox.Quote(c.d.stateDir)
	}
	prelude := strings.Join([]string{
		"unset -v n p",
		state,
		`umask 077`,
		`__s=$__d/spill`,
		`{ mkdir -p -- "$__s" && [ ! -L "$__s" ] && cd -- "$__s" && [ -O . ] && chmod 700 . ; } 2>/dev/null || __s=`,
		fmt.Sprintf(`[ -n "$__s" ] && find . -mindepth 2 -type f -mmin +%d -delete 2>/dev/null`, int(c.d.timing.sweepAge.Minutes())),
		`__g=; read -r __g < /proc/$$/stat 2>/dev/null && { __g=${__g##*) }; set -- $__g; __g=${3-}; }`,
		`printf 'dsh-acp-hello\0%s\0%s\0%s\0' "$__s" "$$" "$__g"`,
		`unset -v __d __s __g`,
		`env -0`,
	}, "; ")
	out, _, err := c.run(ctx, prelude, nil, 4<<20)
	if err != nil {
		return fmt.Errorf("hello: %w", err)
	}
	_, rest, ok := bytes.Cut(out, []byte("dsh-acp-hello\x00"))
	if !ok {
		return fmt.Errorf("hello: unexpected answer %q", clip(out))
	}
	fields := strings.Split(string(rest), "\x00")
	if len(fields) < 3 {
		return fmt.Errorf("hello: unexpected answer %q", clip(out))
	}
	if pid, pgrp := fields[1], fields[2]; pgrp != "" && pgrp != pid {
		// The prelude could not give each command a group of its own.
		return fmt.Errorf("the host's sshd does not start sessions as process group leaders (pid %s, group %s); dsh-acp cannot stop commands there", pid, pgrp)
	}
	c.spillDir = fields[0]
	if c.spillDir == "" {
		c.d.log.Warn("no remote spill directory: long output cannot be saved on the host", zap.String("host", c.d.target.Addr()))
	}
	env := fields[3:]
	if n := len(env); n > 0 && env[n-1] == "" {
		env = env[:n-1]
	}
	c.unset, c.envUnset = scrubPlan(env, c.d.allow, c.d.secrets)
	return c.startSupervisor(ctx)
}

// scrubPlan lists the variables of the remote login environment that the
// credential scrub drops: names bash can unset, and the others.
func scrubPlan(env, allow, secrets []string) (unset, envUnset []string) {
	kept := map[string]bool{}
	for _, kv := range engine.ScrubEnv(env, allow, secrets) {
		name, _, _ := strings.Cut(kv, "=")
		kept[name] = true
	}
	seen := map[string]bool{}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if name == "" || kept[name] || seen[name] {
			continue
		}
		seen[name] = true
		if isName(name) {
			unset = append(unset, name)
		} else {
			envUnset = append(envUnset, name)
		}
	}
	return unset, envUnset
}

// probe runs command as the exec request and reports whether it printed a
// bash version of at least 4.1.
func (c *conn) probe(ctx context.Context, command string) (bool, error) {
	ch, err := c.exec(command)
	if err != nil {
		return false, err
	}
	out, _, err := ch.collect(ctx, nil, 64<<10)
	if err != nil {
		return false, fmt.Errorf("probe: %w", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		var major, minor int
		if _, err := fmt.Sscanf(line, "dsh-acp-probe %d %d", &major, &minor); err == nil {
			return major > 4 || major == 4 && minor >= 1, nil
		}
	}
	return false, nil
}

// run evaluates prelude on the host (through the reader), feeds it stdin
// and returns its stdout (at most limit bytes) and exit status.
func (c *conn) run(ctx context.Context, prelude string, stdin []byte, limit int) ([]byte, int, error) {
	ch, err := c.exec(c.cmdline)
	if err != nil {
		return nil, 0, err
	}
	return ch.collect(ctx, append(stream(prelude), stdin...), limit)
}

// channel is one session channel.
type channel struct {
	ch     ssh.Channel
	c      *conn
	exited chan struct{} // closed once the exit is known or the channel closed
	// status and signal are the exit-status / exit-signal; got tells
	// whether one arrived. Set before exited closes.
	status int
	signal string
	got    bool
}

// exec opens a session channel and sends the exec request without waiting
// for its reply: what the channel's stdin carries follows at once, and
// the first output proves the command started.
func (c *conn) exec(command string) (*channel, error) {
	ch, reqs, err := c.client.OpenChannel("session", nil)
	if err != nil {
		var oe *ssh.OpenChannelError
		if errors.As(err, &oe) {
			return nil, fmt.Errorf("the host refused another session (%v): sshd's MaxSessions (10 by default) caps the commands running at once over one connection", oe)
		}
		if c.isDead(time.Second) {
			return nil, fmt.Errorf("%w: %v", errStale, c.reason())
		}
		return nil, fmt.Errorf("open session: %w", err)
	}
	rc := &channel{ch: ch, c: c, exited: make(chan struct{})}
	go rc.requests(reqs)
	if _, err := ch.SendRequest("exec", false, ssh.Marshal(struct{ Command string }{command})); err != nil {
		ch.Close()
		return nil, fmt.Errorf("exec: %w", err)
	}
	return rc, nil
}

// errStale marks a connection found dead when a channel was opened: the
// caller may dial again once.
var errStale = errors.New("the connection had closed")

// requests records the exit and answers what wants an answer.
func (rc *channel) requests(reqs <-chan *ssh.Request) {
	for r := range reqs {
		switch r.Type {
		case "exit-status":
			var m struct{ Status uint32 }
			if ssh.Unmarshal(r.Payload, &m) == nil && !rc.got {
				rc.status, rc.got = int(m.Status), true
				close(rc.exited)
			}
		case "exit-signal":
			var m struct {
				Signal     string
				CoreDumped bool
				Error      string
				Lang       string
			}
			if ssh.Unmarshal(r.Payload, &m) == nil && !rc.got {
				rc.signal, rc.got = "SIG"+m.Signal, true
				close(rc.exited)
			}
		}
		if r.WantReply {
			_ = r.Reply(false, nil)
		}
	}
	if !rc.got {
		close(rc.exited)
	}
}

// collect writes in to the channel, closes its stdin, and reads stdout (up
// to limit bytes; stderr is discarded) until the channel closes or ctx ends.
func (rc *channel) collect(ctx context.Context, in []byte, limit int) ([]byte, int, error) {
	defer rc.ch.Close()
	stop := context.AfterFunc(ctx, func() { rc.ch.Close() })
	defer stop()
	go func() {
		if len(in) > 0 {
			_, _ = rc.ch.Write(in)
		}
		_ = rc.ch.CloseWrite()
	}()
	go func() { _, _ = io.Copy(io.Discard, rc.ch.Stderr()) }()
	out, err := io.ReadAll(io.LimitReader(rc.ch, int64(limit)))
	if err != nil {
		return nil, 0, err
	}
	_, _ = io.Copy(io.Discard, rc.ch) // past the limit: keep the window open
	<-rc.exited
	if ctx.Err() != nil {
		return nil, 0, ctx.Err()
	}
	if !rc.got {
		if rc.c.isDead(time.Second) {
			return nil, 0, rc.c.lost()
		}
		return out, -1, nil
	}
	return out, rc.status, nil
}

// clip shortens output for an error message.
func clip(b []byte) string {
	if len(b) > 200 {
		b = b[:200]
	}
	return string(b)
}
