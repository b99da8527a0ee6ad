package engine

import (
	"errors"
	"sync"
	"syscall"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
)

// capture keeps the tail of a command's output in memory and, once the
// output outgrows spillAfter bytes, the complete output in a spill file.
//
// The spill is lazy: while the output is smaller than spillAfter (never more
// than the ring) no file exists (a quiet command never touches disk). On the
// first write past it the ring still holds the complete prefix; it is written
// to a new spill file and every later write is appended, from the ring, in
// pieces of up to spillBatch (and at finish, and before a task read). The file is complete
// unless a write failed or it passed the size cap, in which case it is
// removed and never advertised; a failure (not the cap) is kept as the
// spill error the results report.
//
// Each byte is copied into one ring while only one stream has printed (the
// common case: the interleaved ring is that stream's tail, and a result
// hands the one buffer out as both). Per-stream rings start when the second
// stream first prints: the first stream's ring starts as a copy of the
// interleaved one, which until then held nothing else.
//
// write never fails and never blocks on anything but the spill file (the
// local disk, or a spawner's SpillStore), so the pipes are always drained
// and a child never gets SIGPIPE from us. Removing an abandoned spill file
// (freeing up to SpillCap of page cache) is left to a goroutine that
// finish waits for.
type capture struct {
	mu      sync.Mutex
	streams bool            // keep per-stream tails (a foreground run)
	solo    executor.Stream // the one stream printed so far; 0: none
	mixed   bool            // two streams printed
	out     *ring           // per stream, once two printed; nil until then
	err     *ring
	all     blockRing // both streams interleaved in arrival order
	// readers are the pipe readers' blocks in all, by stream, while one
	// stream alone prints: they read straight into them (reserve, commit).
	readers [3]blockWriter

	spills     SpillStore // nil: spilling disabled
	owner      string
	base       string // file name base, e.g. "bash-3"
	spillCap   int64
	spillAfter int64
	log        *zap.Logger

	file SpillFile
	path string // absolute; "" until opened
	size int64  // bytes written to file
	// flushed is the offset (in all) up to which output is in the file;
	// the rest, at most batch bytes, waits in all and is written in one
	// piece (a pipe read is often 4-8 KiB: one file write each would
	// cost a system call per read).
	flushed int64
	batch   int64
	failed  bool   // the spill is incomplete or unavailable, for good
	errMsg  string // why, when a create, write or close failed
	live    *live  // the live observer's delivery, if any
	// removed is closed once an abandoned spill file is closed and
	// removed; nil while none was abandoned.
	removed chan struct{}
}

// spillBatch is how much output at most waits in the ring before it is
// written to the spill file.
const spillBatch = 256 << 10

type captureOpts struct {
	size       int  // bytes per ring
	streams    bool // keep per-stream tails too
	spills     SpillStore
	owner      string
	base       string
	spillCap   int64
	spillAfter int // <= size
	log        *zap.Logger
}

func newCapture(o captureOpts) *capture {
	c := &capture{streams: o.streams, all: newBlockRing(o.size), spills: o.spills, owner: o.owner, base: o.base, spillCap: o.spillCap, spillAfter: int64(min(o.spillAfter, o.size)), log: o.log}
	if c.spillAfter <= 0 {
		c.spillAfter = int64(o.size)
	}
	c.batch = int64(min(spillBatch, o.size))
	return c
}

// write records p as output of stream st.
func (c *capture) write(st executor.Stream, p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.record(st, p, nil)
}

// reserve returns room in the interleaved ring for st's pipe reader to
// read into, or nil when it must read into its own buffer and write: once
// two streams printed (their reads would cut the ring into a segment per
// read), or for a stream other than stdout and stderr. Commit what was
// read with commit; unreserve when the stream ends.
func (c *capture) reserve(st executor.Stream) []byte {
	if st != executor.Stdout && st != executor.Stderr {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mixed || (c.solo != 0 && c.solo != st) {
		c.all.retire(&c.readers[st])
		return nil
	}
	return c.all.reserve(&c.readers[st])
}

// commit records the n bytes st's reader read into its reserved room.
func (c *capture) commit(st executor.Stream, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := &c.readers[st]
	c.record(st, w.b.buf[w.off:w.off+n], w)
}

// unreserve lets go of st's reader block: the stream ended.
func (c *capture) unreserve(st executor.Stream) {
	if st != executor.Stdout && st != executor.Stderr {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all.retire(&c.readers[st])
}

// record keeps p, st's output: copied into all, or (w not nil) already
// in w's reserved room of all. Called with mu held.
func (c *capture) record(st executor.Stream, p []byte, w *blockWriter) {
	if c.solo == 0 && (st == executor.Stdout || st == executor.Stderr) {
		c.solo = st
	} else if st != c.solo {
		c.mixed = true
	}
	if c.streams {
		c.writeStream(st, p)
	}
	if c.file == nil && !c.failed && c.all.total+int64(len(p)) > c.spillAfter {
		c.open()
	}
	if c.file != nil && c.all.total-c.flushed+int64(len(p)) > c.batch {
		c.flush()
		if int64(len(p)) > c.batch { // too big to wait in the ring
			c.flushed += int64(len(p))
			c.append(p)
		}
	}
	if w != nil {
		c.all.commit(w, len(p))
	} else {
		c.all.write(p)
	}
	if c.live != nil {
		c.live.wrote(st, len(p))
	}
}

// writeStream keeps p in st's own ring once two streams have printed.
// Called with mu held, before p reaches all (record has noted st). Bytes
// of a stream other than stdout and stderr go to neither ring.
func (c *capture) writeStream(st executor.Stream, p []byte) {
	if !c.mixed {
		return // all is the solo stream's tail
	}
	if c.out == nil {
		c.split()
	}
	switch st {
	case executor.Stdout:
		c.out.write(p)
	case executor.Stderr:
		c.err.write(p)
	}
}

// split starts the per-stream rings, the solo stream's with all's bytes
// (which are its alone). Called with mu held.
func (c *capture) split() {
	out, err := newRing(c.all.size), newRing(c.all.size)
	c.out, c.err = &out, &err
	if first := c.soloRing(); first != nil {
		first.total = c.all.start()
		c.all.each(c.all.start(), first.write)
	}
}

// soloRing is the per-stream ring of the solo stream, or nil.
func (c *capture) soloRing() *ring {
	switch c.solo {
	case executor.Stdout:
		return c.out
	case executor.Stderr:
		return c.err
	}
	return nil
}

// open creates the spill file; the ring still holds the complete output
// (the threshold is within it), which flush writes first. Called with mu
// held.
func (c *capture) open() {
	if c.spills == nil {
		c.failed = true
		return
	}
	f, abs, err := c.spills.Create(c.owner, c.base)
	if err != nil {
		c.log.Warn("spill unavailable", zap.String("base", c.base), zap.Error(err))
		c.failed, c.errMsg = true, errText(err)
		return
	}
	c.file, c.path, c.flushed = f, abs, c.all.start()
}

// flush appends the bytes the ring holds past flushed to the spill file.
// Called with mu held.
func (c *capture) flush() {
	from := c.flushed
	c.flushed = c.all.total
	c.all.each(from, c.append)
}

func (c *capture) append(p []byte) {
	if c.file == nil || len(p) == 0 {
		return
	}
	if c.size+int64(len(p)) > c.spillCap {
		c.abandon("spill cap reached", false)
		return
	}
	if _, err := c.file.Write(p); err != nil {
		c.log.Warn("spill write failed", zap.String("base", c.base), zap.Error(err))
		c.errMsg = errText(err)
		c.abandon(err.Error(), false)
		return
	}
	c.size += int64(len(p))
}

// abandon closes (unless closed) and removes an incomplete spill file, on
// a goroutine of its own: freeing a large file's pages takes a while, and
// the pipes must go on draining. finish waits for it. Called with mu held.
func (c *capture) abandon(reason string, closed bool) {
	c.log.Debug("spill abandoned", zap.String("base", c.base), zap.String("reason", reason))
	f, base, log := c.file, c.base, c.log
	c.removed = make(chan struct{})
	go func(done chan<- struct{}) {
		defer close(done)
		if !closed {
			f.Close()
		}
		if err := f.Remove(); err != nil {
			log.Warn("spill remove", zap.String("base", base), zap.Error(err))
		}
	}(c.removed)
	c.file, c.path, c.failed = nil, "", true
}

// finish closes the spill file (kept when complete); when it returns, an
// abandoned one is gone. Called once the pipes are drained.
func (c *capture) finish() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.file != nil {
		c.flush()
	}
	if c.file != nil {
		if err := c.file.Close(); err != nil {
			c.log.Warn("spill close failed", zap.String("base", c.base), zap.Error(err))
			c.errMsg = errText(err)
			c.abandon(err.Error(), true)
		}
		c.file = nil
	}
	if c.removed != nil {
		<-c.removed
	}
}

// spillPath is the complete spill file's path, or "".
func (c *capture) spillPath() string {
	if c.failed {
		return ""
	}
	return c.path
}

// result fills a foreground Result's output fields, handing over the
// rings' buffers: while one stream alone printed, its tail and Combined
// are the same slice. Call it once, after finish.
func (c *capture) result(r *executor.Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r.Dropped = c.all.total - int64(c.all.kept())
	r.Combined = c.all.take()
	switch {
	case c.out != nil:
		r.Stdout, r.Stderr = c.out.take(), c.err.take()
	case c.solo == executor.Stdout:
		r.Stdout = r.Combined
	case c.solo == executor.Stderr:
		r.Stderr = r.Combined
	}
	r.SpillPath, r.SpillError = c.spillPath(), c.errMsg
}

// since fills r with the interleaved output from absolute offset off, how
// many bytes after off are no longer in memory, the spill path when a
// complete spill exists (else why it failed, if it did), and returns the
// new offset.
func (c *capture) since(off int64, r *executor.ReadResult) (next int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.file != nil {
		c.flush() // a reader may open the file: it holds what was read
	}
	r.Output, r.Lost = c.all.since(off)
	r.SpillPath, r.SpillError = c.spillPath(), c.errMsg
	return c.all.total
}

// release frees the in-memory buffers once nothing more will be read.
func (c *capture) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all.release()
}

// errText is err as a result may show it: the system's reason alone ("no
// space left on device") when there is one, never the incomplete file's
// path.
func errText(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}
