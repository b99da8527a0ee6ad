package ingress

import (
	"io"
	"sync"
)

// LockedWriter serializes writes to an io.Writer: one Write call completes on
// the underlying writer before the next one starts. When every writer writes
// one whole line per call — the SDK does, and so does the Guard — lines never
// interleave. Hand the same LockedWriter to the SDK and to the Guard.
type LockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// NewLockedWriter returns a LockedWriter writing to w.
func NewLockedWriter(w io.Writer) *LockedWriter { return &LockedWriter{w: w} }

// Write writes p to the underlying writer while holding the lock.
func (l *LockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
