package engine

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
)

// One stream's output is copied into one ring only: no per-stream ring
// exists, and the result's tail of that stream and Combined are one buffer.
func TestCaptureOneStreamOneRing(t *testing.T) {
	for _, st := range []executor.Stream{executor.Stdout, executor.Stderr} {
		c := newCapture(captureOpts{size: 1024, streams: true, log: zap.NewNop()})
		for i := range 100 {
			c.write(st, bytes.Repeat([]byte{byte('a' + i%26)}, 37))
		}
		if c.out != nil || c.err != nil {
			t.Fatalf("stream %d alone: per-stream rings allocated", st)
		}
		var res executor.Result
		c.result(&res)
		tail := res.Stdout
		if st == executor.Stderr {
			tail, res.Stdout = res.Stderr, res.Stderr[:0]
		}
		if len(tail) != 1024 || &tail[0] != &res.Combined[0] || len(res.Stdout)+len(res.Stderr) != 1024 {
			t.Errorf("stream %d: tail %d bytes, combined %d, shared %v", st, len(tail), len(res.Combined), len(tail) > 0 && &tail[0] == &res.Combined[0])
		}
	}
}

// Whatever the interleaving, the tails equal those of three independent
// rings (the earlier design): the split when a second stream starts
// loses nothing.
func TestCaptureTailsMatchSeparateRings(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		size := 1 + rng.IntN(64)
		c := newCapture(captureOpts{size: size, streams: true, log: zap.NewNop()})
		out, errR, all := newRing(size), newRing(size), newRing(size)
		for range rng.IntN(40) {
			st := executor.Stdout
			if rng.IntN(4) == 0 && round%3 != 0 {
				st = executor.Stderr
			}
			p := make([]byte, rng.IntN(2*size))
			for i := range p {
				p[i] = byte('a' + rng.IntN(26))
			}
			c.write(st, p)
			if st == executor.Stdout {
				out.write(p)
			} else {
				errR.write(p)
			}
			all.write(p)
		}
		var res executor.Result
		c.result(&res)
		if !bytes.Equal(res.Stdout, out.bytes()) || !bytes.Equal(res.Stderr, errR.bytes()) || !bytes.Equal(res.Combined, all.bytes()) ||
			res.Dropped != all.total-int64(all.kept()) {
			t.Fatalf("round %d (size %d): stdout %q stderr %q combined %q dropped %d; want %q %q %q", round, size,
				res.Stdout, res.Stderr, res.Combined, res.Dropped, out.bytes(), errR.bytes(), all.bytes())
		}
	}
}

// Abandoning a spill file past the cap does not hold up the pipe reader
// while the file is removed (freeing up to SpillCap of pages); finish
// returns only once it is gone.
func TestCaptureAbandonDoesNotBlockWrites(t *testing.T) {
	store := &blockingStore{release: make(chan struct{}), removing: make(chan struct{})}
	c := newCapture(captureOpts{size: 64, streams: true, spills: store, owner: "s", base: "run-1", spillCap: 256, spillAfter: 32, log: zap.NewNop()})
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for range 10 {
			c.write(executor.Stdout, bytes.Repeat([]byte("x"), 50)) // past the cap on the 6th
		}
	}()
	select {
	case <-wrote:
	case <-time.After(10 * time.Second): // a safety net, not a wait: the writes need no time
		t.Fatal("writes blocked on removing the abandoned spill file")
	}
	<-store.removing // the removal has started and is held
	finished := make(chan struct{})
	go func() { c.finish(); close(finished) }()
	close(store.release)
	<-finished
	if !store.removed() {
		t.Error("finish returned before the abandoned file was removed")
	}
	var res executor.Result
	c.result(&res)
	if res.SpillPath != "" || res.SpillError != "" || res.Dropped != 500-64 {
		t.Errorf("spill %q error %q dropped %d", res.SpillPath, res.SpillError, res.Dropped)
	}
}

// blockingStore's files accept writes; Remove waits for release.
type blockingStore struct {
	release  chan struct{}
	removing chan struct{}
	mu       sync.Mutex
	done     bool
}

func (s *blockingStore) Create(owner, base string) (SpillFile, string, error) {
	return &blockingFile{s: s}, "/spill/" + base, nil
}

func (s *blockingStore) removed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

type blockingFile struct {
	s *blockingStore
	bytes.Buffer
}

func (f *blockingFile) Close() error { return nil }

func (f *blockingFile) Remove() error {
	close(f.s.removing)
	<-f.s.release
	f.s.mu.Lock()
	f.s.done = true
	f.s.mu.Unlock()
	return nil
}

// The spill file gets the complete output in pieces of about spillBatch,
// not one write per pipe read, whatever the sizes of the reads; a task
// read first brings the file up to date.
func TestCaptureSpillWritesInBatches(t *testing.T) {
	store := &countingStore{}
	const size = 1 << 20
	c := newCapture(captureOpts{size: size, spills: store, owner: "s", base: "bash-1", spillCap: 64 << 20, spillAfter: 32 << 10, log: zap.NewNop()})
	rng := rand.New(rand.NewPCG(3, 4))
	var want bytes.Buffer
	for want.Len() < 8<<20 {
		n := 1 + rng.IntN(8<<10)
		if rng.IntN(50) == 0 {
			n = spillBatch + rng.IntN(size) // bigger than a batch
		}
		p := bytes.Repeat([]byte{byte('a' + rng.IntN(26))}, n)
		c.write(executor.Stdout, p)
		want.Write(p)
	}
	var rr executor.ReadResult
	c.since(int64(want.Len()), &rr)
	f := store.file
	if !bytes.Equal(f.Bytes(), want.Bytes()) {
		t.Fatalf("after a read the spill file has %d bytes, want %d", f.Len(), want.Len())
	}
	if max := 2*want.Len()/spillBatch + 2; f.writes > max {
		t.Errorf("%d writes for %d bytes, want at most %d", f.writes, want.Len(), max)
	}
	c.write(executor.Stdout, []byte("tail"))
	want.WriteString("tail")
	c.finish()
	if !bytes.Equal(f.Bytes(), want.Bytes()) || !f.closed {
		t.Errorf("finished spill file has %d bytes (closed %v), want %d", f.Len(), f.closed, want.Len())
	}
}

type countingStore struct{ file *countingFile }

func (s *countingStore) Create(owner, base string) (SpillFile, string, error) {
	s.file = &countingFile{}
	return s.file, "/spill/" + base, nil
}

type countingFile struct {
	bytes.Buffer
	writes int
	closed bool
}

func (f *countingFile) Write(p []byte) (int, error) {
	f.writes++
	return f.Buffer.Write(p)
}
func (f *countingFile) Close() error  { f.closed = true; return nil }
func (f *countingFile) Remove() error { return nil }
