package engine

import (
	"sync"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
)

const (
	// liveLimit bounds the output waiting for a slow observer.
	liveLimit = 1 << 20
	// liveFrame is the pause after a bulk delivery (liveBulk bytes or
	// more): a stream that fills the pipes reaches the observer in at most
	// one batch per frame, which keeps the readers from waking the
	// delivery goroutine for every pipe read and bounds the copying. A
	// smaller delivery (lines, a prompt) is not followed by a pause, so
	// interactive output reaches the observer at once and the card's own
	// coalescing is the only delay a line sees.
	liveFrame = 10 * time.Millisecond
	liveBulk  = 32 << 10
)

// live hands output to an observer without ever slowing the command: the
// pipe readers append to a bounded pending buffer and return at once; one
// delivery goroutine calls observe. Output that does not fit is dropped and
// counted in the next chunk's Dropped.
type live struct {
	observe func(executor.Chunk)
	limit   int

	mu      sync.Mutex
	pend    []byte
	recs    []liveRec
	dropped int64 // not yet reported
	last    executor.Stream
	closed  bool

	wake     chan struct{} // capacity 1: "state changed"
	closing  chan struct{} // closed by close: cuts a frame pause short
	finished chan struct{} // closed when the last chunk was delivered
}

type liveRec struct {
	stream  executor.Stream
	n       int
	dropped int64
}

func newLive(observe func(executor.Chunk), limit int) *live {
	l := &live{observe: observe, limit: limit, wake: make(chan struct{}, 1), closing: make(chan struct{}), finished: make(chan struct{})}
	go l.run()
	return l
}

// push queues p (copied) for delivery, or counts it as dropped.
func (l *live) push(st executor.Stream, p []byte) {
	l.mu.Lock()
	if len(l.pend)+len(p) > l.limit {
		l.dropped += int64(len(p))
		l.last = st
		l.mu.Unlock()
		return
	}
	if n := len(l.recs); n > 0 && l.dropped == 0 && l.recs[n-1].stream == st {
		l.recs[n-1].n += len(p)
	} else {
		l.recs = append(l.recs, liveRec{stream: st, n: len(p), dropped: l.dropped})
		l.dropped = 0
	}
	l.pend = append(l.pend, p...)
	l.last = st
	l.mu.Unlock()
	l.signal()
}

// close ends delivery after everything queued; wait on finished.
func (l *live) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	close(l.closing)
	l.signal()
}

func (l *live) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *live) run() {
	defer close(l.finished)
	var spare []byte
	var spareRecs []liveRec
	frame := time.NewTimer(0)
	defer frame.Stop()
	for {
		l.mu.Lock()
		for len(l.recs) == 0 && !l.closed {
			l.mu.Unlock()
			<-l.wake
			l.mu.Lock()
		}
		if len(l.recs) == 0 {
			// Closed and empty: report a trailing drop, then stop.
			dropped, st := l.dropped, l.last
			l.dropped = 0
			l.mu.Unlock()
			if dropped > 0 {
				l.observe(executor.Chunk{Stream: st, Dropped: dropped})
			}
			return
		}
		data, recs := l.pend, l.recs
		l.pend, l.recs = spare[:0], spareRecs[:0]
		l.mu.Unlock()
		off := 0
		for _, r := range recs {
			l.observe(executor.Chunk{Stream: r.stream, Data: data[off : off+r.n : off+r.n], Dropped: r.dropped})
			off += r.n
		}
		spare, spareRecs = data, recs
		if len(data) < liveBulk {
			continue
		}
		frame.Reset(liveFrame)
		select {
		case <-frame.C:
		case <-l.closing:
		}
	}
}
