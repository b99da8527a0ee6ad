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
