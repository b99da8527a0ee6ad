package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/sourcegraph/jsonrpc2"
	"go.uber.org/zap"
)

// Call sends the daemon's own request to the client and decodes the
// result into result; it returns when the response arrived (an error
// response is a *jsonrpc2.Error), ctx ended, or the input ended
// (jsonrpc2.ErrClosed).
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	conn, err := c.calls.get()
	if err != nil {
		return err
	}
	return conn.Call(ctx, method, params, result)
}

// caller carries the daemon's requests on sourcegraph/jsonrpc2's
// connection, started on the first Call. Its stream writes through the
// Output and reads the responses the Conn passes it, each checked to be
// one that connection can take (a numeric id, a well-formed error): a
// response it cannot decode would close it.
type caller struct {
	out *Output
	log *zap.Logger

	once sync.Once
	conn *jsonrpc2.Conn
	in   chan []byte // responses, for the stream's ReadObject

	mu     sync.Mutex
	closed bool
}

func newCaller(out *Output, log *zap.Logger) *caller {
	return &caller{out: out, log: log, in: make(chan []byte, 64)}
}

// get starts the connection on first use.
func (c *caller) get() (*jsonrpc2.Conn, error) {
	c.once.Do(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.closed {
			c.conn = jsonrpc2.NewConn(context.Background(), callStream{c}, jsonrpc2.HandlerWithError(refuse),
				jsonrpc2.SetLogger(zapPrintf{c.log}))
		}
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.conn == nil {
		return nil, jsonrpc2.ErrClosed
	}
	return c.conn, nil
}

// refuse is the handler of requests on the calling connection: none come
// that way (the Conn dispatches the client's requests itself).
func refuse(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) (any, error) {
	return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "Method not found"}
}

// response passes a response line on, unless nothing was ever asked or it
// cannot be one of ours.
func (c *caller) response(line []byte, id json.RawMessage) {
	if _, err := strconv.ParseUint(string(id), 10, 64); err != nil {
		c.log.Warn("rpc: dropped response", zap.String("reason", "not an id the daemon sends"), zap.String("id", logID(id)))
		return
	}
	var check struct {
		Error *jsonrpc2.Error `json:"error"`
	}
	if err := json.Unmarshal(line, &check); err != nil {
		c.log.Warn("rpc: dropped response", zap.String("reason", "malformed error object"), zap.String("id", logID(id)))
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.conn == nil {
		c.log.Warn("rpc: dropped response", zap.String("reason", "no request of the daemon is pending"), zap.String("id", logID(id)))
		return
	}
	c.in <- append([]byte(nil), line...)
}

// close ends the calling connection: calls waiting fail with ErrClosed.
func (c *caller) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	close(c.in)
	conn := c.conn
	c.mu.Unlock()
	if conn != nil {
		_ = conn.Close()
	}
}

// callStream is the jsonrpc2.ObjectStream of the calling connection.
type callStream struct{ c *caller }

func (s callStream) WriteObject(obj any) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("rpc: encode request: %w", err)
	}
	return s.c.out.Write(append(b, '\n'))
}

func (s callStream) ReadObject(v any) error {
	line, ok := <-s.c.in
	if !ok {
		return io.EOF
	}
	return json.Unmarshal(line, v)
}

func (s callStream) Close() error { return nil }

// zapPrintf is jsonrpc2's logger on zap, at debug level.
type zapPrintf struct{ log *zap.Logger }

func (z zapPrintf) Printf(format string, v ...any) { z.log.Debug(fmt.Sprintf(format, v...)) }
