// Package rpc is the daemon's JSON-RPC 2.0 connection: newline-delimited
// objects on stdin and stdout, one line per message.
//
// A Conn reads its input line by line on one goroutine. A line it cannot
// take (over the length cap, not JSON, not a request, a response or a
// notification) it answers itself with -32700 or -32600 and keeps reading;
// a valid request or notification goes, in wire order and on the reading
// goroutine, to the Preempter, which either takes it there (answers it, or
// consumes a notification) or leaves it to a handler on a goroutine of its
// own. The Preempter is the fast synchronous step (after golang.org/x/tools'
// jsonrpc2_v2): it sees every message in the order the client wrote them,
// so it can bind a cancel to exactly the prompts before it; it must not
// block.
//
// Requests are keyed by the connection, not by their ids: a client may reuse
// an id, and each request still gets exactly one reply. Request.Reply writes
// it (the first call; later ones are dropped and logged), encoded once from
// the result (a json.RawMessage, a wirejson.Appender or any value encoding/json
// takes); the id is echoed as the client wrote it. Conn.Wait returns once
// every request read so far was answered, so the daemon can answer all it
// read before it exits.
//
// The daemon's own requests to the client (session/request_permission) go
// through Call, on github.com/sourcegraph/jsonrpc2's connection, whose
// input is the responses this Conn reads.
//
// Wiring, in the daemon:
//
//	out := rpc.NewOutput(os.Stdout, log)
//	c := rpc.NewConn(os.Stdin, out, preempter, rpc.Options{Logger: log})
//	go c.Run(ctx)
//	<-c.Done() // input ended: shut down, c.Wait(ctx) for the replies
//
// # Known limits
//
// A line is held in memory whole (up to the cap); the id of an over-long
// line is recovered only from its first 4 KiB; a string id with invalid
// UTF-8 cannot be echoed, so its request is answered with a null id;
// batches are refused (ACP sends none).
package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"

	"go.uber.org/zap"
)

// DefaultMaxLine is the line cap used when Options.MaxLine is zero: the
// longest line, in bytes without its '\n', that the connection takes.
const DefaultMaxLine = 10<<20 - 1

// JSON-RPC error codes the connection answers with.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInternalError  = -32603
)

const (
	readBufSize = 64 << 10 // bufio.Reader size for the input
	prefixKeep  = 4 << 10  // bytes of an over-long line kept to recover its id
	keepBufMax  = 1 << 20  // a line buffer grown past this is dropped after use
)

// Preempter takes each request and notification in wire order, on the
// reading goroutine, before the next line is read. It returns true when it
// took the message (it answered the request, or will from a goroutine it
// started; it consumed the notification); false hands a request to
// Options.Handler on a goroutine of its own and drops a notification
// (counted in the log). It must not block.
type Preempter interface {
	Preempt(r *Request) bool
}

// Handler runs a request the Preempter left, on a goroutine of its own. It
// answers with r.Reply; a handler that returns without answering, or
// panics, gets -32603 for that request.
type Handler func(r *Request)

// Options configure a Conn. The zero value is usable.
type Options struct {
	// MaxLine caps a line's length in bytes, without its '\n'. Zero means
	// DefaultMaxLine.
	MaxLine int
	// Handler runs the requests the Preempter leaves; nil answers them
	// -32601 (method not found).
	Handler Handler
	// Logger receives method, id and length of each line (never its
	// content) at debug level, and what was refused at warn level.
	Logger *zap.Logger
}

// Request is one inbound request or notification.
type Request struct {
	Method string
	// ID is the id as the client wrote it (a JSON string of valid UTF-8 or
	// a number); nil for a notification.
	ID json.RawMessage
	// Params as on the wire; nil when absent.
	Params json.RawMessage
	// State is what the Preempter leaves for the Handler of this request
	// (what it decoded, what it opened in wire order).
	State any

	key      uint64 // the connection's own key: ids may repeat
	answered bool   // a reply is being or was written; guarded by conn.mu
	conn     *Conn
	ctx      context.Context
	cancel   context.CancelFunc
}

// IsNotification reports whether r expects no reply.
func (r *Request) IsNotification() bool { return r.ID == nil }

// Context ends when the request was answered or cancelled with
// $/cancel_request (not when the input ends: what was read is answered).
func (r *Request) Context() context.Context { return r.ctx }

// Reply answers r with result, or with err when it is not nil (see
// EncodeError), and reports whether this was r's reply: only the first
// call writes one. It returns once the line was written.
func (r *Request) Reply(result any, err error) bool {
	if r.IsNotification() {
		return false
	}
	return r.conn.reply(r, result, err)
}

// Conn is one JSON-RPC connection. Create it with NewConn, start it with
// Run.
type Conn struct {
	in      *bufio.Reader
	out     *Output
	max     int
	pre     Preempter
	handler Handler
	log     *zap.Logger
	calls   *caller

	line []byte // reused line buffer

	mu      sync.Mutex
	next    uint64
	pending map[uint64]*Request // read, not yet answered
	idle    chan struct{}       // closed while pending is empty
	dropped map[string]uint64   // notifications dropped, by reason

	done     chan struct{}
	doneOnce sync.Once
	err      error // set before done is closed
}

// NewConn returns a connection reading in and writing to out, taking
// messages to pre first. It starts nothing.
func NewConn(in io.Reader, out *Output, pre Preempter, opts Options) *Conn {
	maxLine := opts.MaxLine
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	c := &Conn{
		in: bufio.NewReaderSize(in, readBufSize), out: out, max: maxLine, pre: pre, handler: opts.Handler, log: log,
		pending: map[uint64]*Request{}, idle: make(chan struct{}), dropped: map[string]uint64{},
		done: make(chan struct{}),
	}
	close(c.idle)
	c.calls = newCaller(out, log)
	return c
}

// MaxLine returns the effective line cap in bytes.
func (c *Conn) MaxLine() int { return c.max }

// Output is where the connection writes.
func (c *Conn) Output() *Output { return c.out }

// Done is closed when Run stopped reading: the input reached EOF or failed,
// or Run's ctx ended. Err then tells which.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is nil while running and after a clean EOF; otherwise the read error
// or ctx's error. Valid once Done is closed.
func (c *Conn) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// Run reads the input until EOF, a read error or the end of ctx, answering
// or dispatching every line; then it closes Done and fails the daemon's
// calls still waiting for a response. Requests already dispatched keep
// running: Wait for their replies. Run must be called once.
func (c *Conn) Run(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { c.finish(ctx.Err()) })
	defer stop()
	for {
		rl, ok, err := c.readLine()
		select {
		case <-c.done:
			return c.Err()
		default:
		}
		if ok {
			c.take(rl)
		}
		switch {
		case errors.Is(err, io.EOF):
			c.finish(nil)
			return nil
		case err != nil:
			c.finish(fmt.Errorf("rpc: read input: %w", err))
			return c.Err()
		}
	}
}

func (c *Conn) finish(err error) {
	c.doneOnce.Do(func() {
		c.err = err
		c.calls.close()
		close(c.done)
	})
}

// take handles one line.
func (c *Conn) take(rl rawLine) {
	defer c.shrink()
	if rl.over {
		id := recoverID(rl.data)
		c.log.Warn("rpc: rejected over-long line", zap.Int("len", rl.total), zap.Int("limit", c.max), zap.String("id", logID(id)))
		c.writeRejection(&rejection{code: CodeInvalidRequest, reason: "line too long", id: id, limit: c.max})
		return
	}
	if isBlank(rl.data) {
		return
	}
	msg, rej := classify(rl.data)
	switch {
	case rej != nil:
		c.log.Warn("rpc: rejected line", zap.Int("code", rej.code), zap.String("reason", rej.reason),
			zap.String("id", logID(rej.id)), zap.Int("len", rl.total))
		c.writeRejection(rej)
		return
	case msg.dropped != "":
		c.log.Warn("rpc: dropped response", zap.String("reason", msg.dropped), zap.String("id", logID(msg.ID)), zap.Int("len", rl.total))
		return
	case msg.isResponse():
		c.calls.response(rl.data, msg.ID)
		return
	}
	c.log.Debug("rpc: message", zap.String("method", logMethod(msg.Method)), zap.String("id", logID(msg.ID)), zap.Int("len", rl.total))
	r := c.open(msg.message)
	if r.Method == "$/cancel_request" && r.IsNotification() {
		c.cancelRequest(r.Params)
		return
	}
	if c.preempt(r) {
		return
	}
	if r.IsNotification() {
		c.drop("no handler", r.Method)
		return
	}
	go c.handle(r)
}

// open makes a request of msg and, unless it is a notification, records it
// as awaiting its reply.
func (c *Conn) open(msg message) *Request {
	r := &Request{Method: msg.Method, ID: msg.ID, Params: msg.Params, conn: c}
	if r.IsNotification() {
		r.ctx = context.Background()
		return r
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	r.key = c.next
	if len(c.pending) == 0 {
		c.idle = make(chan struct{})
	}
	c.pending[r.key] = r
	return r
}

// preempt gives r to the Preempter; a panic in it answers a request with
// -32603 (a notification is dropped).
func (c *Conn) preempt(r *Request) (took bool) {
	if c.pre == nil {
		return false
	}
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("rpc: preempter panicked", zap.String("method", logMethod(r.Method)), zap.Any("panic", p), zap.ByteString("stack", debug.Stack()))
			r.Reply(nil, InternalError(r.Method))
			took = true
		}
	}()
	return c.pre.Preempt(r)
}

// handle runs the handler for r and makes sure r is answered.
func (c *Conn) handle(r *Request) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("rpc: handler panicked", zap.String("method", logMethod(r.Method)), zap.Any("panic", p), zap.ByteString("stack", debug.Stack()))
		}
		if r.Reply(nil, InternalError(r.Method)) {
			c.log.Error("rpc: handler returned without a reply", zap.String("method", logMethod(r.Method)))
		}
	}()
	if c.handler == nil {
		r.Reply(nil, MethodNotFound(r.Method))
		return
	}
	c.handler(r)
}

// reply writes r's reply unless it was already answered. r leaves the
// pending requests once its line was written, so Wait returns only after
// every reply is out.
func (c *Conn) reply(r *Request, result any, err error) bool {
	c.mu.Lock()
	_, open := c.pending[r.key]
	if !open || r.answered {
		c.mu.Unlock()
		return false
	}
	r.answered = true
	c.mu.Unlock()
	line := appendReply(make([]byte, 0, 256), r.ID, result, err)
	if werr := c.out.Write(line); werr != nil {
		c.log.Debug("rpc: reply not written", zap.String("method", logMethod(r.Method)), zap.Error(werr))
	}
	r.cancel()
	c.mu.Lock()
	delete(c.pending, r.key)
	if len(c.pending) == 0 {
		close(c.idle)
	}
	c.mu.Unlock()
	return true
}

// Wait blocks until every request read so far was answered, the output is
// broken (no reply can go out), or ctx ends; it returns how many requests
// are still unanswered.
func (c *Conn) Wait(ctx context.Context) int {
	c.mu.Lock()
	idle := c.idle
	c.mu.Unlock()
	select {
	case <-idle:
	case <-c.out.Broken():
	case <-ctx.Done():
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// cancelRequest ends the context of the oldest unanswered request with the
// id in $/cancel_request's params.
func (c *Conn) cancelRequest(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil || p.RequestID == nil {
		c.drop("invalid $/cancel_request", "$/cancel_request")
		return
	}
	want := idKey(p.RequestID)
	c.mu.Lock()
	var oldest *Request
	for _, r := range c.pending {
		if idKey(r.ID) == want && (oldest == nil || r.key < oldest.key) {
			oldest = r
		}
	}
	c.mu.Unlock()
	if oldest != nil {
		oldest.cancel()
	}
}

// idKey is the identity of a JSON-RPC id, whatever its encoding: a string
// by its decoded text, a number by its digits.
func idKey(id json.RawMessage) string {
	if len(id) > 0 && id[0] == '"' {
		var s string
		if json.Unmarshal(id, &s) == nil {
			return "s" + s
		}
	}
	return "n" + string(id)
}

// drop counts one dropped notification and logs a warning at the first drop
// for a reason and then at every power of two, with the count so far.
func (c *Conn) drop(reason, method string) {
	c.mu.Lock()
	c.dropped[reason]++
	n := c.dropped[reason]
	c.mu.Unlock()
	if n&(n-1) == 0 {
		c.log.Warn("notifications dropped", zap.String("reason", reason), zap.String("lastMethod", logMethod(method)), zap.Uint64("count", n))
	}
}

// Drop is how a Preempter counts a notification it consumed without acting
// on it (an invalid one), logged as the connection's own drops are.
func (c *Conn) Drop(reason, method string) { c.drop(reason, method) }

// writeRejection answers one invalid line.
func (c *Conn) writeRejection(r *rejection) {
	if err := c.out.Write(r.marshal()); err != nil {
		c.log.Debug("rpc: error reply not written", zap.Error(err))
	}
}

// shrink drops a line buffer that grew large, so one big line does not pin
// its memory for the rest of the session.
func (c *Conn) shrink() {
	if cap(c.line) > keepBufMax {
		c.line = nil
	}
}

// logID renders an id for logs, bounded in length.
func logID(id json.RawMessage) string {
	const maxLen = 64
	if id == nil {
		return ""
	}
	if len(id) > maxLen {
		return string(id[:maxLen]) + "…"
	}
	return string(id)
}

// logMethod bounds a client-chosen method name for the log.
func logMethod(m string) string {
	const maxLen = 64
	if len(m) > maxLen {
		return m[:maxLen] + "…"
	}
	return m
}
