package acp

import (
	"bytes"
	"io"
	"os"
	"sync"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/acp/ingress"
)

// output is the daemon's stdout: the one serialized writer the SDK, the
// guard and the update writer share. Each Write is one or more whole lines
// and goes out whole; a line that is not valid UTF-8 — not JSON text, which
// the SDK would write for a raw id it echoes — has its invalid bytes
// replaced by U+FFFD first (such bytes can only sit inside JSON strings, so
// the line stays the same JSON). Broken is closed once stdout is gone: on
// the first failed write, or, when stdout is a file descriptor, as soon as
// it reports a hang-up (the client closed its reading end) without waiting
// for a write.
//
// The hang-up watcher (a thread blocked in poll) starts with watch, which
// the server calls when the client's first message other than initialize
// arrives: nothing can be running before that which a hang-up would have
// to stop, and a thread started on the way to the initialize reply delays
// it.
type output struct {
	*ingress.LockedWriter
	broken    chan struct{}
	breakOnce sync.Once

	file *os.File // stdout, when it is a file descriptor
	log  *zap.Logger

	mu        sync.Mutex
	closed    bool
	stopWatch func() // nil until watch
}

// newOutput wraps w. When w is an *os.File, watch starts a goroutine that
// watches it for a hang-up until close.
func newOutput(w io.Writer, log *zap.Logger) *output {
	o := &output{broken: make(chan struct{}), log: log}
	o.file, _ = w.(*os.File)
	o.LockedWriter = ingress.NewLockedWriter(&textWriter{w: &failWriter{w: w, o: o}, log: log})
	return o
}

// watch starts the hang-up watcher, once, unless close came first.
func (o *output) watch() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.file == nil || o.closed || o.stopWatch != nil {
		return
	}
	stop, err := watchHangup(o.file, o.markBroken)
	if err != nil {
		o.log.Debug("stdout is not watched for a hang-up", zap.Error(err))
		o.stopWatch = func() {}
		return
	}
	o.stopWatch = stop
}

// Broken is closed once stdout is gone.
func (o *output) Broken() <-chan struct{} { return o.broken }

// close stops the hang-up watcher (and keeps a later watch from starting
// it).
func (o *output) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	if o.stopWatch != nil {
		o.stopWatch()
	}
}

func (o *output) markBroken() { o.breakOnce.Do(func() { close(o.broken) }) }

// failWriter marks the output broken on the first failed write.
type failWriter struct {
	w io.Writer
	o *output
}

func (f *failWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err != nil {
		f.o.markBroken()
	}
	return n, err
}

// textWriter replaces invalid UTF-8 before it reaches w.
type textWriter struct {
	w   io.Writer
	log *zap.Logger
}

var replacement = []byte(string(utf8.RuneError))

func (t *textWriter) Write(p []byte) (int, error) {
	if utf8.Valid(p) {
		return t.w.Write(p)
	}
	t.log.Warn("invalid UTF-8 in an outgoing message replaced", zap.Int("len", len(p)))
	if _, err := t.w.Write(bytes.ToValidUTF8(p, replacement)); err != nil {
		return 0, err
	}
	return len(p), nil
}
