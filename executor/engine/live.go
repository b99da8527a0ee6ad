package engine

import (
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
)

const (
	// liveFrame is the pause after a bulk delivery (liveBulk bytes or
	// more): a stream that fills the pipes reaches the observer in at most
	// one batch per frame, which keeps the readers from waking the
	// delivery goroutine for every pipe read and bounds the copying. A
	// smaller delivery (lines, a prompt) is not followed by a pause, so
	// interactive output reaches the observer at once and the card's own
	// coalescing is the only delay a line sees.
	liveFrame = 10 * time.Millisecond
	liveBulk  = 32 << 10
	// liveSegs bounds the stream runs waiting for delivery (output that
	// switches streams on every read): past it the oldest run is dropped.
	liveSegs = 4096
)

// live hands a capture's output to an observer without ever slowing the
// command and without a copy of its own on the readers' side: the bytes are
// already in the capture's interleaved ring, so a pipe reader only notes
// which stream they came from and wakes the one delivery goroutine, which
// copies what arrived since its last delivery out of the ring (into one
// reused buffer, at most the ring's size) and calls observe. Output the
// observer fell behind on by more than the ring was overwritten: it is
// counted in the next chunk's Dropped.
//
// The fields below are guarded by the capture's mutex.
type live struct {
	observe func(executor.Chunk)
	c       *capture

	next    int64     // offset in c.all of the first byte not yet delivered
	segs    []liveSeg // the streams of the bytes from next on, in order
	dropped int64     // bytes skipped (too many runs) and not yet reported
	last    executor.Stream
	closed  bool
	started bool // run was started, by the first write

	wake     chan struct{} // capacity 1: "state changed"
	closing  chan struct{} // closed by close: cuts a frame pause short
	finished chan struct{} // closed when the last chunk was delivered
}

// liveSeg is a run of n bytes of one stream.
type liveSeg struct {
	stream executor.Stream
	n      int
}

// newLive delivers c's output, from what it holds now on, to observe. The
// delivery goroutine starts with the first output: a command that prints
// nothing costs none, and its end no hand-off to one.
func newLive(observe func(executor.Chunk), c *capture) *live {
	l := &live{observe: observe, c: c, wake: make(chan struct{}, 1), closing: make(chan struct{}), finished: make(chan struct{})}
	c.mu.Lock()
	l.next = c.all.total
	c.live = l
	c.mu.Unlock()
	return l
}

// wrote notes n bytes of st just written to the ring. Called by the
// capture with its mutex held; never blocks.
func (l *live) wrote(st executor.Stream, n int) {
	if k := len(l.segs); k > 0 && l.segs[k-1].stream == st {
		l.segs[k-1].n += n
	} else {
		if k == liveSegs {
			l.next += int64(l.segs[0].n)
			l.dropped += int64(l.segs[0].n)
			l.segs = append(l.segs[:0], l.segs[1:]...)
		}
		l.segs = append(l.segs, liveSeg{stream: st, n: n})
	}
	l.last = st
	if !l.started && !l.closed {
		l.started = true
		go l.run()
	}
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// close ends delivery after everything written; wait on finished.
func (l *live) close() {
	l.c.mu.Lock()
	l.closed = true
	started := l.started
	l.c.mu.Unlock()
	close(l.closing)
	if !started { // nothing was written: no delivery to wait for
		close(l.finished)
		return
	}
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// liveBatch is one delivery: buf holds the bytes, recs their streams.
type liveBatch struct {
	buf     []byte
	recs    []liveSeg
	dropped int64 // before buf
	stream  executor.Stream
}

func (l *live) run() {
	defer close(l.finished)
	var b liveBatch
	frame := time.NewTimer(0)
	defer frame.Stop()
	for {
		done := l.take(&b)
		if len(b.recs) == 0 {
			if b.dropped > 0 { // a drop with no data after it
				l.observe(executor.Chunk{Stream: b.stream, Dropped: b.dropped})
			}
			if done {
				return
			}
			continue
		}
		off := 0
		dropped := b.dropped
		for _, r := range b.recs {
			l.observe(executor.Chunk{Stream: r.stream, Data: b.buf[off : off+r.n : off+r.n], Dropped: dropped})
			off += r.n
			dropped = 0
		}
		if len(b.buf) < liveBulk {
			continue
		}
		frame.Reset(liveFrame)
		select {
		case <-frame.C:
		case <-l.closing:
		}
	}
}

// take waits for output (or the close) and copies what arrived since the
// last delivery into b. It reports true once closed with nothing left.
func (l *live) take(b *liveBatch) (done bool) {
	c := l.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(l.segs) == 0 && !l.closed {
		c.mu.Unlock()
		<-l.wake
		c.mu.Lock()
	}
	b.buf, b.recs, b.dropped, b.stream = b.buf[:0], b.recs[:0], l.dropped, l.last
	l.dropped = 0
	if len(l.segs) == 0 {
		return true
	}
	// Bytes before the ring's start were overwritten: skip them, whole
	// runs and the head of the first run kept.
	lost := max(c.all.start()-l.next, 0)
	for _, s := range l.segs {
		if lost >= int64(s.n) {
			lost -= int64(s.n)
			b.dropped += int64(s.n)
			continue
		}
		s.n -= int(lost)
		b.dropped += lost
		lost = 0
		b.recs = append(b.recs, s)
	}
	b.buf = c.all.appendFrom(b.buf, max(l.next, c.all.start()))
	l.next, l.segs = c.all.total, l.segs[:0]
	return false
}
