package rpc

import (
	"bufio"
	"errors"
)

// rawLine is one line of input.
type rawLine struct {
	data  []byte // the line without '\n'; for an over-long line, its first prefixKeep bytes
	total int    // the line's full length without '\n'
	over  bool   // longer than the cap: data is only a prefix
}

// readLine reads one line into c.line, consuming an over-long line to its
// '\n' while keeping only its prefix. ok is false when the read yielded no
// byte at all (EOF or an error right at a line boundary).
func (c *Conn) readLine() (rl rawLine, ok bool, err error) {
	c.line = c.line[:0]
	for {
		chunk, rerr := c.in.ReadSlice('\n')
		ok = ok || len(chunk) > 0
		if n := len(chunk); n > 0 && chunk[n-1] == '\n' {
			chunk = chunk[:n-1]
		}
		rl.total += len(chunk)
		if !rl.over && rl.total > c.max {
			rl.over = true
		}
		if rl.over {
			c.keepPrefix(chunk)
		} else {
			c.appendLine(chunk)
		}
		if errors.Is(rerr, bufio.ErrBufferFull) {
			continue
		}
		rl.data = c.line
		if rl.over && len(rl.data) > prefixKeep {
			rl.data = rl.data[:prefixKeep]
		}
		return rl, ok, rerr
	}
}

// appendLine appends chunk to c.line, doubling its capacity up to the cap
// so a long line costs little more than twice its size in allocations.
func (c *Conn) appendLine(chunk []byte) {
	if need := len(c.line) + len(chunk); need > cap(c.line) {
		size := max(2*cap(c.line), readBufSize, need)
		buf := make([]byte, len(c.line), min(size, c.max+1))
		copy(buf, c.line)
		c.line = buf
	}
	c.line = append(c.line, chunk...)
}

// keepPrefix appends to c.line as much of chunk as fits in prefixKeep.
func (c *Conn) keepPrefix(chunk []byte) {
	if room := prefixKeep - len(c.line); room > 0 {
		c.line = append(c.line, chunk[:min(room, len(chunk))]...)
	}
}
