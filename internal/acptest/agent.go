package acptest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sourcegraph/jsonrpc2"
)

// DefaultExitTimeout is how long the cleanup waits for the agent to exit
// after its stdin closed, before killing it and failing the test.
const DefaultExitTimeout = 5 * time.Second

// Responder answers one agent→client request (session/request_permission,
// fs/read_text_file, …). It runs on its own goroutine, so it may block — for
// example until the test has cancelled the turn — without stalling the
// notifications that keep arriving. ctx ends when the connection closes.
// Returning a *jsonrpc2.Error sends that error; any other error is sent as
// -32603 with its text.
type Responder func(ctx context.Context, method string, params json.RawMessage) (any, error)

// sessionUpdate is one session/update notification.
type sessionUpdate struct {
	SessionID string
	Update    json.RawMessage // the "update" object
}

// Agent is a running agent process and the client connection to it. Its
// methods are safe for concurrent use.
type Agent struct {
	t     testing.TB
	cmd   *exec.Cmd
	conn  *jsonrpc2.Conn
	stdin *stdinWriter

	stderr      LockedBuffer
	stdoutEOF   chan struct{} // closed when the agent's stdout reached EOF
	exited      chan struct{}
	waitErr     error // set before exited is closed
	exitTimeout atomic.Int64

	cancel context.CancelFunc
	nextID atomic.Uint64

	mu         sync.Mutex
	changed    chan struct{} // closed and replaced on every inbound line
	inbound    []json.RawMessage
	replies    map[string]json.RawMessage // first response per id, keyed as on the wire
	updates    []sessionUpdate
	violations []string
	responder  Responder
}

// Start runs bin with args, connects a client to its stdin and stdout, and
// registers a cleanup that closes stdin, waits up to the exit timeout for the
// agent to exit (killing it and failing the test if it does not), reports
// protocol violations, and logs the agent's stderr if the test failed.
//
// env entries are added to the test process's environment (later entries
// win), after XDG_CONFIG_HOME set to a fresh temporary directory: an agent
// never reads or writes the real user's configuration (stored credentials)
// unless env says otherwise. Unless GORACE is set, the child gets GORACE=atexit_sleep_ms=0: a
// race-enabled binary otherwise sleeps 1 s at every exit.
// Agent→client requests are answered by DefaultResponder until SetResponder.
func Start(t testing.TB, bin string, args []string, env []string) *Agent {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatalf("acptest: stdin pipe: %v", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatalf("acptest: stdout pipe: %v", err)
	}
	a := &Agent{
		t:         t,
		stdin:     &stdinWriter{f: inW},
		exited:    make(chan struct{}),
		stdoutEOF: make(chan struct{}),
		changed:   make(chan struct{}),
		replies:   map[string]json.RawMessage{},
		responder: DefaultResponder,
	}
	a.exitTimeout.Store(int64(DefaultExitTimeout))
	a.cmd = exec.Command(bin, args...)
	a.cmd.Stdin, a.cmd.Stdout, a.cmd.Stderr = inR, outW, &a.stderr
	a.cmd.Env = childEnv(t, env)
	a.cmd.WaitDelay = time.Second // a child holding stderr must not stall Wait
	err = a.cmd.Start()
	_ = inR.Close()
	_ = outW.Close()
	if err != nil {
		_ = inW.Close()
		_ = outR.Close()
		t.Fatalf("acptest: start %s: %v", bin, err)
	}
	go func() {
		a.waitErr = a.cmd.Wait()
		close(a.exited)
	}()

	// The client reads what the tee has recorded, so everything a test can
	// observe through Call or Notify was recorded first.
	fromTee, toClient := io.Pipe()
	go a.tee(outR, toClient)
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	stream := jsonrpc2.NewPlainObjectStream(&clientRWC{r: fromTee, w: a.stdin})
	a.conn = jsonrpc2.NewConn(ctx, stream, handler{a}, jsonrpc2.SetLogger(nopLogger{}))
	t.Cleanup(a.cleanup)
	return a
}

// childEnv is the test process's environment with a private
// XDG_CONFIG_HOME, plus extra.
func childEnv(t testing.TB, extra []string) []string {
	env := append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
	if _, set := os.LookupEnv("GORACE"); !set {
		env = append(env, "GORACE=atexit_sleep_ms=0")
	}
	return append(env, extra...)
}

// Pid returns the agent's process id.
func (a *Agent) Pid() int { return a.cmd.Process.Pid }

// Call sends a request and waits for its response, decoding the result into
// result (a pointer, or nil to discard it). An error response comes back as a
// *jsonrpc2.Error carrying the code. Ids are numbers from 1 up, so an error
// reply with "id":null never matches a pending call.
func (a *Agent) Call(ctx context.Context, method string, params, result any) error {
	id := jsonrpc2.ID{Num: a.nextID.Add(1)}
	if err := a.conn.Call(ctx, method, params, result, jsonrpc2.PickID(id)); err != nil {
		return fmt.Errorf("acptest: call %s: %w", method, err)
	}
	return nil
}

// Notify sends a notification.
func (a *Agent) Notify(ctx context.Context, method string, params any) error {
	if err := a.conn.Notify(ctx, method, params); err != nil {
		return fmt.Errorf("acptest: notify %s: %w", method, err)
	}
	return nil
}

// WriteRaw writes p to the agent's stdin exactly as given, in one write that
// never interleaves with the client's own messages. Include the '\n'.
func (a *Agent) WriteRaw(p []byte) error {
	if _, err := a.stdin.Write(p); err != nil {
		return fmt.Errorf("acptest: write raw: %w", err)
	}
	return nil
}

// CloseStdin closes the agent's stdin (the agent sees EOF). Messages the
// agent still writes are recorded as usual.
func (a *Agent) CloseStdin() error { return a.stdin.Close() }

// Wait waits for the agent to exit and returns what exec.Cmd.Wait returned
// (an *exec.ExitError for a non-zero exit), or ctx's error.
func (a *Agent) Wait(ctx context.Context) error {
	select {
	case <-a.exited:
		return a.waitErr
	case <-ctx.Done():
		return fmt.Errorf("acptest: wait for agent exit: %w", ctx.Err())
	}
}

// Exited is closed once the agent process has exited and been reaped.
func (a *Agent) Exited() <-chan struct{} { return a.exited }

// Stderr returns everything the agent wrote to stderr so far.
func (a *Agent) Stderr() string { return a.stderr.String() }

// SetExitTimeout changes how long the cleanup waits for the agent to exit.
func (a *Agent) SetExitTimeout(d time.Duration) { a.exitTimeout.Store(int64(d)) }

// SetResponder replaces the function answering agent→client requests; it
// applies to requests arriving afterwards.
func (a *Agent) SetResponder(r Responder) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.responder = r
}

// Inbound returns every message the agent wrote to stdout so far, in wire
// order: responses, notifications and requests alike.
func (a *Agent) Inbound() []json.RawMessage {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]json.RawMessage(nil), a.inbound...)
}

// Updates returns the "update" objects of the session/update notifications
// for sessionID so far, in wire order ("" means every session).
func (a *Agent) Updates(sessionID string) []json.RawMessage {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []json.RawMessage
	for _, u := range a.updates {
		if sessionID == "" || u.SessionID == sessionID {
			out = append(out, u.Update)
		}
	}
	return out
}

// WaitUpdate returns the first "update" object for sessionID ("" means any
// session) for which pred returns true, looking at the updates received so
// far and then at new ones. It fails when ctx ends or when the agent closed
// its stdout without a match.
func (a *Agent) WaitUpdate(ctx context.Context, sessionID string, pred func(json.RawMessage) bool) (json.RawMessage, error) {
	return a.wait(ctx, func() (json.RawMessage, bool) {
		for _, u := range a.updates {
			if (sessionID == "" || u.SessionID == sessionID) && pred(u.Update) {
				return u.Update, true
			}
		}
		return nil, false
	})
}

// WaitResponse returns the agent's first response whose id is the JSON
// literal id (`7`, `"a"`), looking at what was received so far and then at
// new messages; it fails as WaitUpdate does. Unlike WaitInbound it looks the
// id up instead of scanning, so tests sending thousands of raw requests (see
// WriteRaw) stay linear.
func (a *Agent) WaitResponse(ctx context.Context, id string) (json.RawMessage, error) {
	return a.wait(ctx, func() (json.RawMessage, bool) {
		m, ok := a.replies[id]
		return m, ok
	})
}

// WaitInbound returns the first message from the agent for which pred
// returns true, looking at what was received so far and then at new
// messages. It fails as WaitUpdate does. pred runs with the Agent's lock
// held, as WaitUpdate's does: it must not call the Agent.
func (a *Agent) WaitInbound(ctx context.Context, pred func(json.RawMessage) bool) (json.RawMessage, error) {
	return a.wait(ctx, func() (json.RawMessage, bool) {
		for _, m := range a.inbound {
			if pred(m) {
				return m, true
			}
		}
		return nil, false
	})
}

// wait runs find under a.mu each time something arrives, until it succeeds,
// ctx ends, or the agent's stdout closed with no match.
func (a *Agent) wait(ctx context.Context, find func() (json.RawMessage, bool)) (json.RawMessage, error) {
	for {
		a.mu.Lock()
		m, ok := find()
		changed := a.changed
		a.mu.Unlock()
		if ok {
			return m, nil
		}
		select {
		case <-a.stdoutEOF:
			// Nothing more will arrive: look once more, then give up.
			a.mu.Lock()
			m, ok = find()
			a.mu.Unlock()
			if ok {
				return m, nil
			}
			return nil, errors.New("acptest: wait: the agent closed its stdout")
		default:
		}
		select {
		case <-changed:
		case <-a.stdoutEOF:
		case <-ctx.Done():
			return nil, fmt.Errorf("acptest: wait: %w", ctx.Err())
		}
	}
}

// tee reads the agent's stdout line by line, records each message, and
// passes the ones the client can take on to it. It keeps draining after the
// client closed, so the agent never blocks on a full stdout pipe.
func (a *Agent) tee(out *os.File, toClient *io.PipeWriter) {
	defer func() { _ = out.Close() }()
	defer func() { _ = toClient.Close() }()
	br := bufio.NewReader(out)
	forward := true
	for {
		line, err := br.ReadBytes('\n')
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			if a.record(trimmed) && forward {
				if _, werr := toClient.Write(append(trimmed, '\n')); werr != nil {
					forward = false
				}
			}
		}
		if err != nil {
			close(a.stdoutEOF)
			return
		}
	}
}

// wireMessage holds the members tee inspects.
type wireMessage struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
	Params struct {
		SessionID string          `json:"sessionId"`
		Update    json.RawMessage `json:"update"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// record stores one line and reports whether the client should see it:
// jsonrpc2 closes the whole connection on a line it cannot classify, so such
// lines are recorded as protocol violations instead, and a response with a
// null id (an error about a line the agent could not read) matches no call.
// A line that is not valid UTF-8 is not JSON text (RFC 8259 §8.1), though
// encoding/json accepts it: it is recorded as a violation, and kept.
func (a *Agent) record(line []byte) bool {
	line = bytes.Clone(line)
	var m wireMessage
	perr := json.Unmarshal(line, &m)
	a.mu.Lock()
	defer a.mu.Unlock()
	defer func() {
		close(a.changed)
		a.changed = make(chan struct{})
	}()
	if perr != nil {
		a.violations = append(a.violations, fmt.Sprintf("non-JSON-RPC line on stdout (%v): %.200s", perr, line))
		return false
	}
	if !utf8.Valid(line) {
		a.violations = append(a.violations, fmt.Sprintf("invalid UTF-8 on stdout: %q", line[:min(len(line), 200)]))
	}
	a.inbound = append(a.inbound, line)
	isRequest, isResponse := m.Method != nil, m.Result != nil || m.Error != nil
	switch {
	case isRequest == isResponse:
		a.violations = append(a.violations, fmt.Sprintf("neither request nor response: %.200s", line))
		return false
	case isRequest && *m.Method == "session/update":
		a.updates = append(a.updates, sessionUpdate{SessionID: m.Params.SessionID, Update: m.Params.Update})
	case isResponse && (m.ID == nil || string(m.ID) == "null"):
		return false
	case isResponse:
		if _, seen := a.replies[string(m.ID)]; !seen {
			a.replies[string(m.ID)] = line
		}
	}
	return true
}

// handler answers agent→client requests; notifications were recorded by tee.
type handler struct{ a *Agent }

// Handle runs on jsonrpc2's read loop: it must not call the agent, and it
// hands each request to the responder on a goroutine of its own.
func (h handler) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	if req.Notif {
		return
	}
	h.a.mu.Lock()
	respond := h.a.responder
	h.a.mu.Unlock()
	var params json.RawMessage
	if req.Params != nil {
		params = *req.Params
	}
	go func() {
		result, err := respond(ctx, req.Method, params)
		if err == nil {
			_ = conn.Reply(ctx, req.ID, result)
			return
		}
		var rpcErr *jsonrpc2.Error
		if !errors.As(err, &rpcErr) {
			rpcErr = &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: err.Error()}
		}
		_ = conn.ReplyWithError(ctx, req.ID, rpcErr)
	}()
}

// cleanup ends the agent: close stdin, wait, kill if it hangs, report.
func (a *Agent) cleanup() {
	t := a.t
	_ = a.CloseStdin()
	timeout := time.Duration(a.exitTimeout.Load())
	select {
	case <-a.exited:
	case <-time.After(timeout):
		t.Errorf("acptest: agent (pid %d) still running %v after its stdin closed; killing it", a.Pid(), timeout)
		_ = a.cmd.Process.Kill()
		<-a.exited
	}
	_ = a.conn.Close()
	a.cancel()
	a.mu.Lock()
	violations := append([]string(nil), a.violations...)
	a.mu.Unlock()
	for _, v := range violations {
		t.Errorf("acptest: agent protocol violation: %s", v)
	}
	if strings.Contains(a.Stderr(), "WARNING: DATA RACE") {
		t.Errorf("acptest: the race detector reported a data race in the agent")
	}
	if t.Failed() {
		t.Logf("acptest: agent exit: %v; stderr:\n%s", a.waitErr, a.Stderr())
	}
}

// stdinWriter serializes writes to the agent's stdin: jsonrpc2 writes each
// message with one Write, WriteRaw with another, and they never interleave.
type stdinWriter struct {
	mu     sync.Mutex
	f      *os.File
	closed bool
}

func (w *stdinWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, os.ErrClosed
	}
	return w.f.Write(p)
}

// Close closes stdin once; later calls return nil.
func (w *stdinWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	return w.f.Close()
}

// clientRWC is the stream jsonrpc2 owns: it reads from the tee and writes to
// the shared stdin writer. Closing it closes both.
type clientRWC struct {
	r *io.PipeReader
	w *stdinWriter
}

func (c *clientRWC) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *clientRWC) Write(p []byte) (int, error) { return c.w.Write(p) }
func (c *clientRWC) Close() error {
	_ = c.r.Close()
	return c.w.Close()
}

// LockedBuffer is a bytes.Buffer safe for the writer goroutine os/exec runs
// and readers in the test (a child's stdout or stderr read while it runs).
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// nopLogger silences jsonrpc2's own logging; violations are reported by the
// cleanup instead.
type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}
