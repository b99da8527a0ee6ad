package chat

import (
	"io"
	"strings"
	"sync"

	tea "charm.land/bubbletea/v2"
)

// outbox is where the renderer draws while the terminal program runs: one
// printer goroutine hands each batch of whole lines to the program, which
// prints it above its view, into the terminal's scrollback, in order.
// Once the program has ended, what is left and what comes later is
// written to the terminal directly.
type outbox struct {
	mu      sync.Mutex
	cond    *sync.Cond
	buf     []byte
	written int64 // bytes written so far
	printed int64 // bytes handed to the program (or written directly)
	direct  io.Writer
	wake    chan struct{}
}

func newOutbox() *outbox {
	o := &outbox{wake: make(chan struct{}, 1)}
	o.cond = sync.NewCond(&o.mu)
	return o
}

// Write queues p; it never blocks on the program.
func (o *outbox) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.direct != nil {
		n, err := o.direct.Write(p)
		o.written += int64(n)
		o.printed = o.written
		return n, err
	}
	o.buf = append(o.buf, p...)
	o.written += int64(len(p))
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return len(p), nil
}

// print runs the printer until stop closes: each batch of whole lines is
// sent to p as one Println.
func (o *outbox) print(p *tea.Program, stop <-chan struct{}) {
	for {
		select {
		case <-o.wake:
		case <-stop:
			return
		}
		o.mu.Lock()
		i := strings.LastIndexByte(string(o.buf), '\n')
		if i < 0 || o.direct != nil {
			o.mu.Unlock()
			continue
		}
		text := string(o.buf[:i])
		o.buf = append(o.buf[:0], o.buf[i+1:]...)
		o.mu.Unlock()
		p.Send(tea.Println(text)())
		o.mu.Lock()
		o.printed += int64(i + 1)
		o.cond.Broadcast()
		o.mu.Unlock()
	}
}

// sync waits until every whole line written so far is with the program
// (or on the terminal).
func (o *outbox) sync() {
	o.mu.Lock()
	defer o.mu.Unlock()
	target := o.written - int64(len(o.buf)-lastLineEnd(o.buf))
	for o.printed < target && o.direct == nil {
		o.cond.Wait()
	}
}

func lastLineEnd(b []byte) int { return strings.LastIndexByte(string(b), '\n') + 1 }

// goDirect writes what is left to w, and everything later.
func (o *outbox) goDirect(w io.Writer) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.buf) > 0 {
		_, _ = w.Write(o.buf)
		o.buf = nil
	}
	o.direct = w
	o.printed = o.written
	o.cond.Broadcast()
}
