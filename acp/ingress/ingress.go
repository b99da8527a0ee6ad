// Package ingress guards the daemon's stdin before the ACP SDK reads it.
//
// The SDK (github.com/coder/acp-go-sdk v0.13.0) reads newline-delimited
// JSON-RPC with a 10 MiB bufio.Scanner: a longer line closes the whole
// connection, a malformed line is dropped without the -32700 reply JSON-RPC
// requires, a request id is echoed back byte for byte (invalid UTF-8
// included), its notification queue (1024 entries) closes the connection
// when a burst overflows it, and a cancel is bound to whichever prompt is
// running when the SDK's notification goroutine gets to it. The Guard sits
// in front of it: it reads stdin line by line, answers every line the SDK
// would mishandle with a JSON-RPC error of its own, tells an observer about
// every valid message in wire order, and forwards the line — unchanged,
// with the params the observer gave it, or not at all for a notification
// the observer dropped or a request it answered itself — to the reader the
// SDK consumes.
//
// Wiring, in the daemon:
//
//	out := ingress.NewLockedWriter(os.Stdout)
//	g := ingress.New(os.Stdin, out, ingress.Options{Observe: obs, Logger: log})
//	conn := acpsdk.NewAgentSideConnection(agent, out, g.Reader())
//	// ... finish wiring agent and conn: the SDK reads nothing until Run ...
//	go g.Run(ctx)
//	<-g.Done() // stdin ended (or ctx was cancelled): shut down
//
// Cancel Run's ctx when the SDK's connection ends: the Guard then stops
// forwarding instead of blocking on a reader nobody drains.
//
// Known limits: a line is held in memory whole (up to the cap); the id of an
// over-long line is recovered only from its first 4 KiB; a string id with
// invalid UTF-8 cannot be echoed, so it is answered with a null id; a
// message whose params the observer replaced is forwarded rebuilt from its
// jsonrpc, id, method and params members (any other top-level member is
// left out, as the SDK ignores it anyway).
package ingress

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"go.uber.org/zap"
)

// SDKMaxLine is the longest line, in bytes without its '\n' (a '\r' before
// it counts), that the SDK's scanner accepts: its buffer is 10 MiB and must
// also hold the newline. A longer line would close the SDK's connection, so
// the Guard never forwards one.
const SDKMaxLine = 10<<20 - 1

// DefaultMaxLine is the line cap used when Options.MaxLine is zero.
const DefaultMaxLine = SDKMaxLine

// JSON-RPC error codes the Guard answers with.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
)

const (
	readBufSize = 64 << 10 // bufio.Reader size for the input
	prefixKeep  = 4 << 10  // bytes of an over-long line kept to recover its id
	keepBufMax  = 1 << 20  // a line buffer grown past this is dropped after use
)

// Message is one valid inbound JSON-RPC message, as seen by Options.Observe.
//
// A request has Method and ID; a notification has Method and a nil ID (an
// explicit "id":null counts as a notification, as it does for the SDK); a
// response to one of the daemon's own requests has an empty Method and its ID.
// The raw fields are copies the observer may keep.
type Message struct {
	Method string          // "" for a response
	ID     json.RawMessage // a JSON string or number as on the wire; nil for a notification
	Params json.RawMessage // as on the wire; nil when absent
	Len    int             // length of the line in bytes, without its '\n'
}

// IsResponse reports whether m answers a request the daemon sent.
func (m Message) IsResponse() bool { return m.Method == "" }

// IsNotification reports whether m is a notification (no reply expected).
func (m Message) IsNotification() bool { return m.Method != "" && m.ID == nil }

// Verdict is what the Guard does with an observed message. The zero value
// forwards the line unchanged.
type Verdict struct {
	// Drop consumes a notification: nothing is forwarded. It is ignored for
	// requests and responses, which are forwarded unless Answered: the SDK
	// owns the reply to a request and the daemon's pending calls.
	Drop bool
	// Answered says the observer answered a request itself, writing its
	// reply to the writer the Guard and the SDK share, on this goroutine
	// (the daemon answers initialize so): nothing is forwarded. It is
	// ignored for notifications and responses.
	Answered bool
	// Params, if non-nil, replaces the params of a request or notification:
	// the forwarded line is rebuilt from the message's jsonrpc, id and
	// method and these params. It must be a JSON object or array; anything
	// else is logged and the line forwarded unchanged. A rebuilt line longer
	// than the cap is answered as an over-long line.
	Params json.RawMessage
}

// Options configure a Guard. The zero value is usable.
type Options struct {
	// MaxLine caps a line's length in bytes, without its '\n'. Zero means
	// DefaultMaxLine; values above SDKMaxLine are lowered to it, because the
	// SDK would close the connection on a longer line.
	MaxLine int
	// Observe, if set, is called synchronously on the Guard's goroutine for
	// every valid message, in wire order, before the line is forwarded: the
	// SDK cannot see a message before Observe has returned for it. Its
	// Verdict says what to forward. Observe must not block on the SDK
	// handling that same message. A panic in Observe is logged and the
	// message is forwarded unchanged.
	Observe func(Message) Verdict
	// Logger, if set, receives method, id and length of each line (never its
	// content). Valid messages log at debug level, rejected lines at warn.
	Logger *zap.Logger
}

// Guard validates newline-delimited JSON-RPC from an input, answers invalid
// lines itself and forwards valid ones to Reader. Create it with New and
// start it with Run.
type Guard struct {
	in      *bufio.Reader
	out     io.Writer
	max     int
	observe func(Message) Verdict
	log     *zap.Logger

	pr *io.PipeReader
	pw *io.PipeWriter

	line []byte // reused line buffer

	done     chan struct{}
	doneOnce sync.Once
	err      error // set before done is closed
}

// New returns a Guard reading in and writing its error replies to out.
// out must be the same serialized writer the SDK writes to (a
// *LockedWriter): each reply is one Write of one whole line. New starts
// nothing; the SDK reading Reader blocks until Run is called.
func New(in io.Reader, out io.Writer, opts Options) *Guard {
	maxLine := opts.MaxLine
	if maxLine <= 0 || maxLine > SDKMaxLine {
		maxLine = SDKMaxLine
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	pr, pw := io.Pipe()
	return &Guard{
		in:      bufio.NewReaderSize(in, readBufSize),
		out:     out,
		max:     maxLine,
		observe: opts.Observe,
		log:     log,
		pr:      pr,
		pw:      pw,
		done:    make(chan struct{}),
	}
}

// MaxLine returns the effective line cap in bytes.
func (g *Guard) MaxLine() int { return g.max }

// Reader returns what the SDK must read: exactly the valid lines of the
// input, each ending in '\n', in input order. It reports io.EOF after the
// input ended and every forwarded line was read.
func (g *Guard) Reader() io.Reader { return g.pr }

// Done is closed when the Guard stopped forwarding: the input reached EOF or
// failed, or Run's ctx was cancelled. Err then tells which.
func (g *Guard) Done() <-chan struct{} { return g.done }

// Err returns nil while running and after a clean EOF; otherwise the read
// error or ctx's error. Valid once Done is closed.
func (g *Guard) Err() error {
	select {
	case <-g.done:
		return g.err
	default:
		return nil
	}
}

// Run reads the input until EOF, answering or forwarding every line, then
// closes Reader (the SDK sees EOF) and Done. It returns nil on EOF, the read
// error if the input failed, or ctx's error. Cancelling ctx closes Reader at
// once, but a read already blocked on the input returns only when the input
// yields or is closed. Run must be called once.
func (g *Guard) Run(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { g.finish(ctx.Err()) })
	defer stop()
	if err := ctx.Err(); err != nil {
		g.finish(err)
		return err
	}
	for {
		rl, ok, err := g.readLine()
		select {
		case <-g.done: // ctx was cancelled
			return g.Err()
		default:
		}
		if ok {
			if werr := g.handle(rl); werr != nil {
				// Only finish (ctx cancelled) closes Reader under a write.
				g.finish(werr)
				return g.Err()
			}
		}
		if errors.Is(err, io.EOF) {
			g.finish(nil)
			return g.Err()
		}
		if err != nil {
			err = fmt.Errorf("ingress: read input: %w", err)
			g.finish(err)
			return g.Err()
		}
	}
}

// finish closes Reader and Done once, recording err as the cause.
func (g *Guard) finish(err error) {
	g.doneOnce.Do(func() {
		g.err = err
		// Closing the write side also fails a forwarding write blocked on it.
		_ = g.pw.CloseWithError(err) // nil: the SDK reads io.EOF
		close(g.done)
	})
}

// rawLine is one line of input.
type rawLine struct {
	data  []byte // the line without '\n'; for an over-long line, its first prefixKeep bytes
	total int    // the line's full length without '\n'
	over  bool   // longer than the cap: data is only a prefix
}

// readLine reads one line into g.line, consuming an over-long line to its
// '\n' while keeping only its prefix. ok is false when the read yielded no
// byte at all (EOF or an error right at a line boundary).
func (g *Guard) readLine() (rl rawLine, ok bool, err error) {
	g.line = g.line[:0]
	for {
		chunk, rerr := g.in.ReadSlice('\n')
		ok = ok || len(chunk) > 0
		if n := len(chunk); n > 0 && chunk[n-1] == '\n' {
			chunk = chunk[:n-1]
		}
		rl.total += len(chunk)
		if !rl.over && rl.total > g.max {
			rl.over = true
		}
		if rl.over {
			g.keepPrefix(chunk)
		} else {
			g.appendLine(chunk)
		}
		if errors.Is(rerr, bufio.ErrBufferFull) {
			continue
		}
		rl.data = g.line
		if rl.over && len(rl.data) > prefixKeep {
			rl.data = rl.data[:prefixKeep]
		}
		return rl, ok, rerr
	}
}

// appendLine appends chunk to g.line, doubling its capacity up to the cap
// (plus room for the '\n' forward adds) so a long line costs little more
// than twice its size in allocations.
func (g *Guard) appendLine(chunk []byte) {
	if need := len(g.line) + len(chunk); need > cap(g.line) {
		size := max(2*cap(g.line), readBufSize, need+1)
		buf := make([]byte, len(g.line), min(size, g.max+1))
		copy(buf, g.line)
		g.line = buf
	}
	g.line = append(g.line, chunk...)
}

// keepPrefix appends to g.line as much of chunk as fits in prefixKeep.
func (g *Guard) keepPrefix(chunk []byte) {
	if room := prefixKeep - len(g.line); room > 0 {
		g.line = append(g.line, chunk[:min(room, len(chunk))]...)
	}
}

// handle answers or forwards one line. It returns an error only when Reader
// was closed under the forwarding write.
func (g *Guard) handle(rl rawLine) error {
	defer g.shrink()
	if rl.over {
		g.rejectLong(rl.data, rl.total, nil)
		return nil
	}
	if isBlank(rl.data) {
		return nil
	}
	msg, rej := classify(rl.data)
	switch {
	case rej != nil:
		g.reject(rej, rl.total)
		return nil
	case msg.dropped != "":
		g.log.Warn("ingress: dropped response", zap.String("reason", msg.dropped),
			zap.String("id", logID(msg.ID)), zap.Int("len", rl.total))
		return nil
	}
	msg.Len = rl.total
	g.log.Debug("ingress: message", zap.String("method", msg.Method),
		zap.String("id", logID(msg.ID)), zap.Int("len", rl.total))
	v := g.notify(msg.Message)
	switch {
	case v.Drop && msg.IsNotification():
		return nil
	case v.Answered && !msg.IsNotification() && !msg.IsResponse():
		return nil
	case v.Params != nil && !msg.IsResponse():
		line, ok := g.rebuild(msg.Message, v.Params)
		if !ok {
			break
		}
		if len(line) > g.max {
			g.rejectLong(nil, len(line), msg.ID)
			return nil
		}
		return g.forward(line)
	}
	return g.forward(rl.data)
}

// rebuild renders m as a line with params in place of its own; false when
// params is not a JSON object or array.
func (g *Guard) rebuild(m Message, params json.RawMessage) ([]byte, bool) {
	params = bytes.TrimSpace(params)
	if len(params) == 0 || params[0] != '{' && params[0] != '[' || !json.Valid(params) {
		g.log.Error("ingress: observer gave params that are not an object or array; forwarding the line unchanged",
			zap.String("method", m.Method), zap.String("id", logID(m.ID)))
		return nil, false
	}
	method, err := json.Marshal(m.Method)
	if err != nil { // unreachable: a string always encodes
		return nil, false
	}
	line := make([]byte, 0, len(params)+len(m.ID)+len(method)+48)
	line = append(line, `{"jsonrpc":"2.0",`...)
	if m.ID != nil {
		line = append(append(append(line, `"id":`...), m.ID...), ',')
	}
	line = append(append(line, `"method":`...), method...)
	line = append(append(append(line, `,"params":`...), params...), '}')
	return line, true
}

// shrink drops a line buffer that grew large, so one big line does not pin
// its memory for the rest of the session.
func (g *Guard) shrink() {
	if cap(g.line) > keepBufMax {
		g.line = nil
	}
}

// notify calls the observer, containing a panic in it: the verdict is then
// the zero one.
func (g *Guard) notify(m Message) (v Verdict) {
	if g.observe == nil {
		return Verdict{}
	}
	defer func() {
		if r := recover(); r != nil {
			g.log.Error("ingress: observer panicked",
				zap.String("method", m.Method), zap.String("id", logID(m.ID)), zap.Any("panic", r))
			v = Verdict{}
		}
	}()
	return g.observe(m)
}

// forward writes line and its '\n' to Reader; the write returns once the SDK
// has read it all.
func (g *Guard) forward(line []byte) error {
	line = append(line, '\n') // g.line has room for it (see appendLine); a rebuilt line grows
	_, err := g.pw.Write(line)
	return err
}

// reject answers one invalid line.
func (g *Guard) reject(r *rejection, n int) {
	g.log.Warn("ingress: rejected line",
		zap.Int("code", r.code), zap.String("reason", r.reason), zap.String("id", logID(r.id)), zap.Int("len", n))
	g.reply(r)
}

// rejectLong answers a line longer than the cap, given its kept prefix (the
// id is recovered from it) or its id.
func (g *Guard) rejectLong(prefix []byte, total int, id json.RawMessage) {
	if id == nil {
		id = recoverID(prefix)
	}
	g.log.Warn("ingress: rejected over-long line",
		zap.Int("len", total), zap.Int("limit", g.max), zap.String("id", logID(id)))
	g.reply(&rejection{code: CodeInvalidRequest, reason: "line too long", id: id, limit: g.max})
}

// reply writes the error reply for r as one line in one Write.
func (g *Guard) reply(r *rejection) {
	b := r.marshal()
	if _, err := g.out.Write(b); err != nil {
		g.log.Warn("ingress: write error reply", zap.Error(err))
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
