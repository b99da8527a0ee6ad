package mcp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor/local"
	"github.com/dsh-acp/dsh-acp/tools"
)

// Defaults for zero Config fields.
const (
	DefaultGrace          = 2 * time.Second
	DefaultConnectTimeout = 30 * time.Second
	DefaultCallTimeout    = 10 * time.Minute
)

// Spiller keeps a text the model sees cut, whole, in a file it can read;
// *local.Executor implements it with the command output spill files.
type Spiller interface {
	SpillText(owner, base string, data []byte) (path string, err error)
}

// Config is how a session's servers are started and called. The zero
// value works: every zero field takes its default.
type Config struct {
	// Env is the environment a stdio server starts with, before the
	// variables the client gave for it (nil: the daemon's environment
	// scrubbed of credentials by local.ScrubEnv, as commands get it).
	Env []string
	// Grace is the time between TERM and KILL when a server is stopped
	// (DefaultGrace).
	Grace time.Duration
	// Spawner starts the stdio servers, as it starts commands (nil: a
	// plain spawner of the package's own, without a process limit).
	Spawner *local.Spawner
	// ConnectTimeout bounds starting a server, the MCP handshake and the
	// first tool listing (DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// CallTimeout bounds one tool call; past it the call is cancelled
	// (DefaultCallTimeout).
	CallTimeout time.Duration
	// OutputLimit caps the text the model reads of one result, in
	// characters (tools.DefaultOutputLimit), as for bash.
	OutputLimit int
	// Spill keeps a cut result whole; nil: the model is told the full
	// text is unavailable.
	Spill Spiller
	// HTTPClient makes the requests to HTTP servers (nil: a client
	// without an overall timeout, since an event stream stays open).
	HTTPClient *http.Client
	// ClientName and ClientVersion are what the servers are told of the
	// client ("dsh-acp").
	ClientName, ClientVersion string
	// Logger receives names, ids, counts and durations, never arguments
	// or results.
	Logger *zap.Logger
}

func (c Config) withDefaults() Config {
	if c.Env == nil {
		c.Env = local.ScrubEnv(os.Environ(), nil, nil)
	}
	if c.Grace <= 0 {
		c.Grace = DefaultGrace
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.OutputLimit <= 0 {
		c.OutputLimit = tools.DefaultOutputLimit
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	if c.ClientName == "" {
		c.ClientName = "dsh-acp"
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return c
}

// Transports a Spec may name.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http" // streamable HTTP
)

// Spec is one server as the client described it.
type Spec struct {
	Name string
	// Transport is TransportStdio or TransportHTTP; any other value is
	// reported as unsupported.
	Transport string
	// Command, Args and Env ("NAME=value") start a stdio server.
	Command string
	Args    []string
	Env     []string
	// URL and Headers reach an HTTP server.
	URL     string
	Headers http.Header
}

// Failure is a server that could not be used, and why, for the user.
type Failure struct {
	Server, Reason string
}

// Servers is one session's MCP servers: connected in the background by
// Start, their tools offered through Tools, stopped by Close. Its methods
// are safe for concurrent use.
type Servers struct {
	cfg        Config
	owner, cwd string
	log        *zap.Logger

	ctx    context.Context // connecting; ends with Close
	cancel context.CancelFunc
	ready  chan struct{} // every connection attempt ended

	mu       sync.Mutex
	conns    []*conn // connected, in the client's order
	failures []Failure
	procs    []*local.Program // every process started
	closed   bool
	tools    []tools.Tool // the offered tools, named

	spills atomic.Int64 // names spill files
}

// conn is one connected server.
type conn struct {
	spec    Spec
	cs      *sdk.ClientSession
	proc    *local.Program // nil for HTTP
	changed atomic.Bool
	defs    []*sdk.Tool // by name; guarded by Servers.mu
}

// Start connects to every server of specs in the background, each within
// cfg.ConnectTimeout, for the session owner (its id: the owner of its
// spill files) whose directory is cwd (each stdio server runs there, and
// every server is told it as the root). Servers that fail are listed by
// Failures once Ready; the others work.
func Start(cfg Config, owner, cwd string, specs []Spec) *Servers {
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Servers{cfg: cfg, owner: owner, cwd: cwd, log: cfg.Logger.With(zap.String("session", owner)),
		ctx: ctx, cancel: cancel, ready: make(chan struct{})}
	go s.connectAll(specs)
	return s
}

// Ready waits until every connection attempt has ended (or ctx ends, or
// the servers are closed); it reports whether they had.
func (s *Servers) Ready(ctx context.Context) bool {
	select {
	case <-s.ready:
		return true
	case <-ctx.Done():
		return false
	}
}

// Done is closed once every connection attempt has ended.
func (s *Servers) Done() <-chan struct{} { return s.ready }

// Failures lists the servers that could not be used, in the client's
// order: empty until Ready.
func (s *Servers) Failures() []Failure {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.failures)
}

// Tools are the connected servers' tools, named mcp__<server>__<tool>, in
// the client's server order and by tool name within a server: empty until
// Ready, then as of the latest Refresh.
func (s *Servers) Tools() []tools.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tools)
}

// Refresh lists again the tools of every server that announced a change
// (notifications/tools/list_changed) since it was last listed, each
// within the connect timeout, and reports whether the offered tools
// changed. A server whose listing fails keeps its old tools. It returns
// at once when no server announced a change.
func (s *Servers) Refresh(ctx context.Context) bool {
	s.mu.Lock()
	var stale []*conn
	for _, c := range s.conns {
		if c.changed.Swap(false) {
			stale = append(stale, c)
		}
	}
	s.mu.Unlock()
	if len(stale) == 0 {
		return false
	}
	for _, c := range stale {
		lctx, cancel := context.WithTimeout(ctx, s.cfg.ConnectTimeout)
		defs, err := listTools(lctx, c.cs)
		cancel()
		if err != nil {
			s.log.Warn("mcp list tools", zap.String("server", c.spec.Name), zap.Error(err))
			continue
		}
		s.mu.Lock()
		c.defs = defs
		s.mu.Unlock()
	}
	return s.rename()
}

// Close stops every server: in-flight connections are abandoned, sessions
// closed, processes stopped (TERM, grace, KILL to each group) and reaped,
// waiting until ctx ends. Idempotent.
func (s *Servers) Close(ctx context.Context) {
	s.mu.Lock()
	s.closed = true
	conns, procs := slices.Clone(s.conns), slices.Clone(s.procs)
	s.mu.Unlock()
	s.cancel()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(func() { p.Stop(ctx, s.cfg.Grace) })
	}
	for _, c := range conns {
		if c.proc == nil { // HTTP: end the remote session, bounded
			wg.Go(func() { closeBounded(ctx, c.cs) })
		}
	}
	wg.Wait()
	for _, c := range conns {
		if c.proc != nil {
			closeBounded(ctx, c.cs) // the process is gone: this returns at once
		}
	}
}

// closeBounded closes cs, giving up when ctx ends.
func closeBounded(ctx context.Context, cs *sdk.ClientSession) {
	done := make(chan struct{})
	go func() { _ = cs.Close(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// connectAll connects to every spec at once and names the tools.
func (s *Servers) connectAll(specs []Spec) {
	defer close(s.ready)
	results := make([]*conn, len(specs))
	reasons := make([]string, len(specs))
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for i, spec := range specs {
		switch {
		case spec.Name == "":
			reasons[i] = "the server has no name"
			continue
		case seen[spec.Name]:
			reasons[i] = "another server of this session has the same name"
			continue
		}
		seen[spec.Name] = true
		wg.Go(func() {
			start := time.Now()
			c, err := s.connect(spec)
			if err != nil {
				reasons[i] = err.Error()
				s.log.Info("mcp server unavailable", zap.String("server", spec.Name), zap.Duration("took", time.Since(start)))
				return
			}
			results[i] = c
			s.log.Info("mcp server connected", zap.String("server", spec.Name), zap.Int("tools", len(c.defs)),
				zap.Duration("took", time.Since(start)))
		})
	}
	wg.Wait()
	s.mu.Lock()
	for i, c := range results {
		switch {
		case c != nil && !s.closed:
			s.conns = append(s.conns, c)
		case c != nil:
			go closeBounded(context.Background(), c.cs) // its process is being stopped by Close
		case reasons[i] != "":
			s.failures = append(s.failures, Failure{Server: specs[i].Name, Reason: reasons[i]})
		}
	}
	s.mu.Unlock()
	s.rename()
}

// connect starts or reaches one server, initializes it and lists its
// tools, within the connect timeout.
func (s *Servers) connect(spec Spec) (*conn, error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.ConnectTimeout)
	defer cancel()
	c := &conn{spec: spec}
	transport, err := s.transport(c)
	if err != nil {
		return nil, err
	}
	client := sdk.NewClient(&sdk.Implementation{Name: s.cfg.ClientName, Version: s.cfg.ClientVersion}, &sdk.ClientOptions{
		Logger: slog.New(slog.DiscardHandler),
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			c.changed.Store(true)
			s.log.Debug("mcp tool list changed", zap.String("server", spec.Name))
		},
	})
	if s.cwd != "" {
		client.AddRoots(&sdk.Root{URI: (&url.URL{Scheme: "file", Path: s.cwd}).String(), Name: filepath.Base(s.cwd)})
	}
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return nil, s.connectError(ctx, c, "cannot initialize the server", err)
	}
	c.cs = cs
	defs, err := listTools(ctx, cs)
	if err != nil {
		_ = cs.Close()
		return nil, s.connectError(ctx, c, "cannot list the server's tools", err)
	}
	c.defs = defs
	return c, nil
}

// transport is how to reach spec's server.
func (s *Servers) transport(c *conn) (sdk.Transport, error) {
	spec := c.spec
	switch spec.Transport {
	case TransportStdio:
		if spec.Command == "" {
			return nil, errors.New("the server has no command")
		}
		dir := s.cwd
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			dir = ""
		}
		return &stdioTransport{command: spec.Command, args: spec.Args, dir: dir, env: mergeEnv(s.cfg.Env, spec.Env),
			spawner: s.cfg.Spawner, started: func(p *local.Program) error { return s.track(c, p) }}, nil
	case TransportHTTP:
		u, err := url.Parse(spec.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%q is not an http(s) URL", spec.URL)
		}
		client := *s.cfg.HTTPClient
		client.Transport = headerTransport{base: s.cfg.HTTPClient.Transport, headers: spec.Headers}
		return &sdk.StreamableClientTransport{Endpoint: spec.URL, HTTPClient: &client, MaxRetries: 2}, nil
	}
	return nil, fmt.Errorf("the %q transport is not supported", spec.Transport)
}

// track records a started process so Close stops it; after Close it
// refuses it.
func (s *Servers) track(c *conn, p *local.Program) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("the session closed")
	}
	s.procs = append(s.procs, p)
	c.proc = p
	return nil
}

// connectError words a failed connection: the process's own failure when
// it exited, the timeout when it passed, else err.
func (s *Servers) connectError(ctx context.Context, c *conn, what string, err error) error {
	var se startErr
	if errors.As(err, &se) {
		return se
	}
	if c.proc != nil {
		defer func() { go c.proc.Stop(context.Background(), s.cfg.Grace) }()
		// The process may be exiting: give it a moment to tell why.
		select {
		case <-c.proc.Done():
		case <-time.After(200 * time.Millisecond):
		}
		if msg := failure(c.proc); msg != "" {
			return fmt.Errorf("%s: %s", what, msg)
		}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%s: no answer within %v", what, s.cfg.ConnectTimeout)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// listTools lists every tool of cs, by name.
func listTools(ctx context.Context, cs *sdk.ClientSession) ([]*sdk.Tool, error) {
	var defs []*sdk.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		if t != nil && t.Name != "" {
			defs = append(defs, t)
		}
	}
	slices.SortStableFunc(defs, func(a, b *sdk.Tool) int { return cmp.Compare(a.Name, b.Name) })
	return slices.CompactFunc(defs, func(a, b *sdk.Tool) bool { return a.Name == b.Name }), nil
}

// rename rebuilds the offered tools from the servers' definitions and
// reports whether they changed.
func (s *Servers) rename() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := newNamer()
	var out []tools.Tool
	for _, c := range s.conns {
		for _, def := range c.defs {
			out = append(out, newTool(s, c, n.name(c.spec.Name, def.Name), def))
		}
	}
	changed := !slices.EqualFunc(out, s.tools, func(a, b tools.Tool) bool { return a.(*tool).same(b.(*tool)) })
	s.tools = out
	return changed
}

// headerTransport adds the client's headers to every request to a server.
type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	base := h.base
	if base == nil {
		base = http.DefaultTransport
	}
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, vs := range h.headers {
			r.Header.Del(k)
			for _, v := range vs {
				r.Header.Add(k, v)
			}
		}
	}
	return base.RoundTrip(r)
}
