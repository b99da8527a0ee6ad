package engine

import "slices"

// ring keeps the last size bytes written to it (a stream's own tail, once
// two streams printed; the interleaved stream is a blockRing) and counts every byte ever
// written, so a reader can address output by absolute offset. Its buffer
// grows on demand up to size and never beyond: a command that prints nothing
// costs nothing, one that prints gigabytes costs size bytes.
type ring struct {
	buf   []byte // len(buf) < size while filling; == size once full
	size  int
	head  int   // once full: index of the oldest byte
	total int64 // bytes ever written
}

func newRing(size int) ring { return ring{size: size} }

// write appends p, dropping the oldest bytes past size. It never fails.
func (r *ring) write(p []byte) {
	r.total += int64(len(p))
	if r.size <= 0 {
		return
	}
	if len(p) >= r.size {
		r.grow(r.size)
		r.buf = r.buf[:r.size]
		copy(r.buf, p[len(p)-r.size:])
		r.head = 0
		return
	}
	if room := r.size - len(r.buf); room > 0 {
		n := min(room, len(p))
		r.grow(len(r.buf) + n)
		r.buf = append(r.buf, p[:n]...)
		p = p[n:]
		r.head = 0
		if len(p) == 0 {
			return
		}
	}
	n := copy(r.buf[r.head:], p)
	copy(r.buf, p[n:])
	r.head = (r.head + len(p)) % r.size
}

// grow makes room for need bytes without exceeding size.
func (r *ring) grow(need int) {
	if need <= cap(r.buf) {
		return
	}
	c := min(r.size, max(need, 2*cap(r.buf), 4096))
	nb := make([]byte, len(r.buf), c)
	copy(nb, r.buf)
	r.buf = nb
}

// kept is the number of bytes held.
func (r *ring) kept() int { return len(r.buf) }

// start is the absolute offset of the oldest byte held.
func (r *ring) start() int64 { return r.total - int64(len(r.buf)) }

// segments returns the held bytes, oldest first, as at most two slices that
// alias the buffer.
func (r *ring) segments() (a, b []byte) {
	if len(r.buf) < r.size {
		return r.buf, nil
	}
	return r.buf[r.head:], r.buf[:r.head]
}

// bytes returns a copy of the held bytes, oldest first.
func (r *ring) bytes() []byte {
	a, b := r.segments()
	out := make([]byte, 0, len(a)+len(b))
	return append(append(out, a...), b...)
}

// take returns the held bytes, oldest first, without copying: the buffer is
// rotated in place and handed over, and the ring is left empty (its total
// is kept). Use it once nothing more will be written.
func (r *ring) take() []byte {
	if len(r.buf) == r.size && r.head > 0 {
		slices.Reverse(r.buf[:r.head])
		slices.Reverse(r.buf[r.head:])
		slices.Reverse(r.buf)
	}
	out := r.buf
	r.buf, r.head = nil, 0
	return out
}

// since returns a copy of the bytes from absolute offset off to the end, and
// how many bytes after off are no longer held.
func (r *ring) since(off int64) (data []byte, lost int64) {
	if off >= r.total {
		return nil, 0
	}
	if s := r.start(); off < s {
		lost, off = s-off, s
	}
	skip := int(off - r.start())
	a, b := r.segments()
	if skip >= len(a) {
		b, a = b[skip-len(a):], nil
	} else {
		a = a[skip:]
	}
	out := make([]byte, 0, len(a)+len(b))
	return append(append(out, a...), b...), lost
}

// release frees the buffer; later reads see everything as lost.
func (r *ring) release() {
	r.buf, r.head = nil, 0
	r.size = 0
}
