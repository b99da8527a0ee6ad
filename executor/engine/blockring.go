package engine

const (
	// blockSize is the unit a blockRing keeps bytes in.
	blockSize = 128 << 10
	// minRoom is the least room a pipe reader's block must have left for
	// the next read into it; one with less is retired for a fresh one.
	minRoom = 32 << 10
)

// block is a buffer a blockRing's segments point into. refs counts the
// segments that point into it and the writer (a pipe reader, the copy
// path) that may still fill it; at zero it is free for reuse.
type block struct {
	buf  []byte
	refs int
}

// seg is n bytes of a block from off.
type seg struct {
	b      *block
	off, n int
}

// blockWriter is a writer's block and where its free room starts.
type blockWriter struct {
	b   *block
	off int
}

// blockRing keeps the last size bytes written to it, like ring, in
// segments of blocks, and counts every byte ever written. Bytes get in two
// ways: write copies them; a pipe reader reads straight into room its
// blockWriter reserved and commits what it read, so those bytes are never
// copied at all. Blocks are allocated on demand (a quiet command costs
// nothing) and reused once nothing points into them, so a ring costs about
// size plus a block per writer, however much passes through it.
//
// Not safe for concurrent use; the room a reader reserved is written
// without the caller's lock, and nothing reads it before commit.
type blockRing struct {
	size  int
	segs  []seg // oldest first, from segs[first]
	first int
	held  int   // bytes in segs
	total int64 // bytes ever written
	free  []*block
	copyW blockWriter // write's block
}

func newBlockRing(size int) blockRing { return blockRing{size: size} }

// kept is the number of bytes held.
func (r *blockRing) kept() int { return r.held }

// start is the absolute offset of the oldest byte held.
func (r *blockRing) start() int64 { return r.total - int64(r.held) }

// write appends a copy of p, dropping the oldest bytes past size.
func (r *blockRing) write(p []byte) {
	if r.size <= 0 {
		r.total += int64(len(p))
		return
	}
	if len(p) > r.size { // only the last size bytes can be kept
		r.total += int64(len(p) - r.size)
		p = p[len(p)-r.size:]
	}
	w := &r.copyW
	for len(p) > 0 {
		if w.b == nil || w.off == len(w.b.buf) {
			r.retire(w)
			w.b, w.off = r.grab(), 0
		}
		k := copy(w.b.buf[w.off:], p)
		r.add(w.b, w.off, k)
		w.off += k
		p = p[k:]
	}
}

// reserve returns the room w's next read goes into: at least minRoom
// bytes of a block no one else writes. Commit what was read with commit.
func (r *blockRing) reserve(w *blockWriter) []byte {
	if w.b == nil || len(w.b.buf)-w.off < minRoom {
		r.retire(w)
		w.b, w.off = r.grab(), 0
	}
	return w.b.buf[w.off:]
}

// commit appends the n bytes read into w's reserved room.
func (r *blockRing) commit(w *blockWriter, n int) []byte {
	p := w.b.buf[w.off : w.off+n]
	if r.size <= 0 {
		r.total += int64(n)
		return p
	}
	r.add(w.b, w.off, n)
	w.off += n
	return p
}

// retire lets go of w's block (its bytes stay while segments point there).
func (r *blockRing) retire(w *blockWriter) {
	if w.b != nil {
		r.unref(w.b)
		w.b, w.off = nil, 0
	}
}

// add records n bytes of b from off, then drops what is past size.
func (r *blockRing) add(b *block, off, n int) {
	if n == 0 {
		return
	}
	r.total += int64(n)
	r.held += n
	if k := len(r.segs); k > r.first {
		if last := &r.segs[k-1]; last.b == b && last.off+last.n == off {
			last.n += n
			r.trim()
			return
		}
	}
	b.refs++
	r.segs = append(r.segs, seg{b: b, off: off, n: n})
	r.trim()
}

// trim drops the oldest bytes while more than size are held.
func (r *blockRing) trim() {
	for r.held > r.size {
		s := &r.segs[r.first]
		excess := r.held - r.size
		if s.n > excess {
			s.off, s.n, r.held = s.off+excess, s.n-excess, r.size
			break
		}
		r.held -= s.n
		r.unref(s.b)
		*s = seg{}
		r.first++
	}
	if r.first > 32 && r.first > len(r.segs)/2 {
		n := copy(r.segs, r.segs[r.first:])
		clear(r.segs[n:])
		r.segs, r.first = r.segs[:n], 0
	}
}

// grab returns a free block, or a new one, held once (by its writer).
func (r *blockRing) grab() *block {
	if n := len(r.free); n > 0 {
		b := r.free[n-1]
		r.free[n-1] = nil
		r.free = r.free[:n-1]
		b.refs = 1
		return b
	}
	return &block{buf: make([]byte, blockSize), refs: 1}
}

func (r *blockRing) unref(b *block) {
	if b.refs--; b.refs == 0 && len(r.free) < 4 {
		r.free = append(r.free, b)
	}
}

// each calls fn with the held bytes from absolute offset off (at least
// start) on, oldest first, as slices of the blocks.
func (r *blockRing) each(off int64, fn func([]byte)) {
	skip := max(off-r.start(), 0)
	for _, s := range r.segs[r.first:] {
		if skip >= int64(s.n) {
			skip -= int64(s.n)
			continue
		}
		fn(s.b.buf[s.off+int(skip) : s.off+s.n])
		skip = 0
	}
}

// appendFrom appends the held bytes from off on to dst.
func (r *blockRing) appendFrom(dst []byte, off int64) []byte {
	r.each(off, func(p []byte) { dst = append(dst, p...) })
	return dst
}

// since returns a copy of the bytes from absolute offset off to the end, and
// how many bytes after off are no longer held.
func (r *blockRing) since(off int64) (data []byte, lost int64) {
	if off >= r.total {
		return nil, 0
	}
	if s := r.start(); off < s {
		lost, off = s-off, s
	}
	return r.appendFrom(make([]byte, 0, r.total-off), off), lost
}

// take returns the held bytes, oldest first, in one buffer, and empties
// the ring (its total is kept). Use it once nothing more will be written.
func (r *blockRing) take() []byte {
	var out []byte
	if r.held > 0 {
		out = r.appendFrom(make([]byte, 0, r.held), r.start())
	}
	r.drop()
	return out
}

// release frees the blocks; later reads see everything as lost.
func (r *blockRing) release() {
	r.drop()
	r.size = 0
}

func (r *blockRing) drop() {
	r.segs, r.first, r.held, r.free, r.copyW = nil, 0, 0, nil, blockWriter{}
}
