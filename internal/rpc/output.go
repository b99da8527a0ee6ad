package rpc

import (
	"io"
	"os"
	"sync"

	"go.uber.org/zap"
)

// Output is the connection's serialized writer: replies, the daemon's
// notifications and its requests all go through it, each Write one or more
// whole lines, written whole before the next Write starts, so lines never
// interleave. Broken is closed once the output is gone: on the first failed
// write, or, when it is a file descriptor, as soon as it reports a hang-up
// (the client closed its reading end), without waiting for a write.
//
// The hang-up watcher (a thread blocked in poll) starts with Watch, which
// the daemon calls when the client's first message other than initialize
// arrives: a thread started on the way to the initialize reply delays it.
type Output struct {
	mu sync.Mutex // serializes writes
	w  io.Writer

	broken    chan struct{}
	breakOnce sync.Once

	file *os.File // the output, when it is a file descriptor
	log  *zap.Logger

	wmu       sync.Mutex // guards closed and stopWatch
	closed    bool
	stopWatch func() // nil until Watch
}

// NewOutput wraps w.
func NewOutput(w io.Writer, log *zap.Logger) *Output {
	if log == nil {
		log = zap.NewNop()
	}
	o := &Output{w: w, broken: make(chan struct{}), log: log}
	o.file, _ = w.(*os.File)
	return o
}

// Write writes p (whole lines) at once; a failed write marks the output
// broken.
func (o *Output) Write(p []byte) error {
	o.mu.Lock()
	_, err := o.w.Write(p)
	o.mu.Unlock()
	if err != nil {
		o.markBroken()
	}
	return err
}

// Writer is o as an io.Writer (each Write whole lines).
func (o *Output) Writer() io.Writer { return outputWriter{o} }

type outputWriter struct{ o *Output }

func (w outputWriter) Write(p []byte) (int, error) {
	if err := w.o.Write(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Watch starts the hang-up watcher, once, unless Close came first.
func (o *Output) Watch() {
	o.wmu.Lock()
	defer o.wmu.Unlock()
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

// Broken is closed once the output is gone.
func (o *Output) Broken() <-chan struct{} { return o.broken }

// Close stops the hang-up watcher (and keeps a later Watch from starting
// it). It does not close the underlying writer.
func (o *Output) Close() {
	o.wmu.Lock()
	defer o.wmu.Unlock()
	o.closed = true
	if o.stopWatch != nil {
		o.stopWatch()
	}
}

func (o *Output) markBroken() { o.breakOnce.Do(func() { close(o.broken) }) }
