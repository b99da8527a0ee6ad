package acp

import (
	"io"
	"sync"
)

// watchedWriter reports the first write error (the client closed stdout:
// EPIPE) on Broken, so the daemon shuts down as it would on stdin EOF.
type watchedWriter struct {
	w      io.Writer
	once   sync.Once
	broken chan struct{}
}

func newWatchedWriter(w io.Writer) *watchedWriter {
	return &watchedWriter{w: w, broken: make(chan struct{})}
}

func (w *watchedWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil {
		w.once.Do(func() { close(w.broken) })
	}
	return n, err
}

// Broken is closed after the first failed write.
func (w *watchedWriter) Broken() <-chan struct{} { return w.broken }
