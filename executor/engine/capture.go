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
// to a new spill file and every later write is appended. The file is complete
// unless a write failed or it passed the size cap, in which case it is
// removed and never advertised; a failure (not the cap) is kept as the
// spill error the results report.
//
// write never fails and never blocks on anything but the spill file (the
// local disk, or a spawner's SpillStore), so the pipes are always drained
// and a child never gets SIGPIPE from us.
type capture struct {
	mu       sync.Mutex
	out, err *ring // per stream; nil for background tasks
	all      ring  // both streams interleaved in arrival order

	spills     SpillStore // nil: spilling disabled
	owner      string
	base       string // file name base, e.g. "bash-3"
	spillCap   int64
	spillAfter int64
	log        *zap.Logger

	file   SpillFile
	path   string // absolute; "" until opened
	size   int64
	failed bool   // the spill is incomplete or unavailable, for good
	errMsg string // why, when a create, write or close failed
}

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
	c := &capture{all: newRing(o.size), spills: o.spills, owner: o.owner, base: o.base, spillCap: o.spillCap, spillAfter: int64(min(o.spillAfter, o.size)), log: o.log}
	if c.spillAfter <= 0 {
		c.spillAfter = int64(o.size)
	}
	if o.streams {
		out, err := newRing(o.size), newRing(o.size)
		c.out, c.err = &out, &err
	}
	return c
}

// write records p as output of stream st.
func (c *capture) write(st executor.Stream, p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.out != nil && st == executor.Stdout:
		c.out.write(p)
	case c.err != nil && st == executor.Stderr:
		c.err.write(p)
	}
	if c.file != nil || (!c.failed && c.all.total+int64(len(p)) > c.spillAfter) {
		c.spill(p)
	}
	c.all.write(p)
}

// spill appends p to the spill file, opening it with the held prefix first.
// Called with mu held.
func (c *capture) spill(p []byte) {
	if c.file == nil {
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
		c.file, c.path = f, abs
		a, b := c.all.segments()
		c.append(a)
		c.append(b)
	}
	c.append(p)
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

// abandon closes (unless closed) and removes an incomplete spill file.
// Called with mu held.
func (c *capture) abandon(reason string, closed bool) {
	c.log.Debug("spill abandoned", zap.String("base", c.base), zap.String("reason", reason))
	if !closed {
		c.file.Close()
	}
	if err := c.file.Remove(); err != nil {
		c.log.Warn("spill remove", zap.String("base", c.base), zap.Error(err))
	}
	c.file, c.path, c.failed = nil, "", true
}

// finish closes the spill file (kept when complete). Called once the pipes
// are drained.
func (c *capture) finish() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.file == nil {
		return
	}
	if err := c.file.Close(); err != nil {
		c.log.Warn("spill close failed", zap.String("base", c.base), zap.Error(err))
		c.errMsg = errText(err)
		c.abandon(err.Error(), true)
		return
	}
	c.file = nil
}

// spillPath is the complete spill file's path, or "".
func (c *capture) spillPath() string {
	if c.failed {
		return ""
	}
	return c.path
}

// result fills a foreground Result's output fields, handing over the
// rings' buffers. Call it once, after finish.
func (c *capture) result(r *executor.Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r.Dropped = c.all.total - int64(c.all.kept())
	r.Stdout, r.Stderr, r.Combined = c.out.take(), c.err.take(), c.all.take()
	r.SpillPath, r.SpillError = c.spillPath(), c.errMsg
}

// since fills r with the interleaved output from absolute offset off, how
// many bytes after off are no longer in memory, the spill path when a
// complete spill exists (else why it failed, if it did), and returns the
// new offset.
func (c *capture) since(off int64, r *executor.ReadResult) (next int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
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
