package engine

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
)

// A blockRing holds what a plain ring of the same size would, however the
// bytes get in (copied, or read into reserved room by two writers).
func TestBlockRingMatchesRing(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 120 {
		size := 1 + rng.IntN(3*blockSize)
		if round%2 == 0 {
			size = 1 + rng.IntN(200)
		}
		br, want := newBlockRing(size), newRing(size)
		var ws [2]blockWriter
		for range rng.IntN(60) {
			p := make([]byte, rng.IntN(2*minRoom))
			for i, c := 0, byte(rng.IntN(256)); i < len(p); i++ {
				p[i] = c + byte(i) // distinct runs: a misplaced byte shows
			}
			switch k := rng.IntN(3); k {
			case 2:
				br.write(p)
			default:
				room := br.reserve(&ws[k])
				n := copy(room, p)
				br.commit(&ws[k], n)
				p = p[:n]
			}
			want.write(p)
			if br.total != want.total || br.kept() != want.kept() {
				t.Fatalf("round %d: total %d kept %d, want %d %d", round, br.total, br.kept(), want.total, want.kept())
			}
		}
		for _, off := range []int64{0, want.start(), want.total / 2, want.total} {
			got, lost := br.since(off)
			w, wlost := want.since(off)
			if !bytes.Equal(got, w) || lost != wlost {
				t.Fatalf("round %d: since(%d) differs", round, off)
			}
		}
		if got := br.take(); !bytes.Equal(got, want.bytes()) {
			t.Fatalf("round %d (size %d): take differs", round, size)
		}
	}
}

// However much passes through it, a blockRing keeps about size bytes of
// blocks: a block is reused once nothing points into it.
func TestBlockRingStaysBounded(t *testing.T) {
	br := newBlockRing(1 << 20)
	var w blockWriter
	blocks := map[*block]bool{}
	for range 20000 {
		room := br.reserve(&w)
		blocks[w.b] = true
		br.commit(&w, min(len(room), 8<<10))
		br.write(make([]byte, 100))
	}
	if max := (1<<20)/minRoom + 8; len(blocks) > max {
		t.Errorf("%d blocks used, want at most %d", len(blocks), max)
	}
}

// A pipe reader reads straight into the capture's ring: consecutive reads
// get consecutive room of one block (not the same buffer again, which
// would be copied from), and the result holds exactly what was read.
func TestPumpReadsIntoTheRing(t *testing.T) {
	e := newTestEngine(t, fakeSpawner{chunks: 6, chunk: 5000})
	res, err := e.Run(context.Background(), resolveFake(t, e), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := fakeSpawner{}.last()
	if len(p.reads) < 3 {
		t.Fatalf("%d reads", len(p.reads))
	}
	for i := 1; i < 3; i++ {
		prev, cur := p.reads[i-1], p.reads[i]
		if &prev[:cap(prev)][len(prev)] != &cur[:1][0] {
			t.Errorf("read %d did not continue where read %d ended", i, i-1)
		}
	}
	if !bytes.Equal(res.Stdout, p.written.Bytes()) || !bytes.Equal(res.Combined, res.Stdout) {
		t.Errorf("stdout %d bytes, want the %d read", len(res.Stdout), p.written.Len())
	}
}

func newTestEngine(t *testing.T, sp Spawner) *Engine {
	t.Helper()
	e, err := New(sp, Config{StateDir: t.TempDir(), Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Shutdown(context.Background()) })
	return e
}

func resolveFake(t *testing.T, e *Engine) executor.Spec {
	t.Helper()
	spec, err := e.Resolve(executor.Request{Command: "fake", SessionCwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// fakeSpawner's process prints chunks of chunk bytes on stdout (nothing on
// stderr) and exits; its stdout records the buffers it was read into.
type fakeSpawner struct{ chunks, chunk int }

var fakeLast struct {
	sync.Mutex
	p *fakeProcess
}

func (fakeSpawner) last() *fakeProcess {
	fakeLast.Lock()
	defer fakeLast.Unlock()
	return fakeLast.p
}

func (s fakeSpawner) Spawn(Command) (Process, error) {
	p := &fakeProcess{left: s.chunks, chunk: s.chunk, done: make(chan struct{})}
	fakeLast.Lock()
	fakeLast.p = p
	fakeLast.Unlock()
	return p, nil
}

type fakeProcess struct {
	left, chunk int
	reads       [][]byte // what each Read filled
	written     bytes.Buffer
	done        chan struct{}
	once        sync.Once
}

func (p *fakeProcess) Read(b []byte) (int, error) {
	if p.left == 0 {
		p.once.Do(func() { close(p.done) })
		return 0, io.EOF
	}
	p.left--
	n := min(len(b), p.chunk)
	for i := range n {
		b[i] = byte('a' + (p.written.Len()+i)%26)
	}
	p.written.Write(b[:n])
	p.reads = append(p.reads, b[:n])
	return n, nil
}

func (p *fakeProcess) Close() error                { return nil }
func (p *fakeProcess) Stdout() io.ReadCloser       { return p }
func (p *fakeProcess) Stderr() io.ReadCloser       { return io.NopCloser(bytes.NewReader(nil)) }
func (p *fakeProcess) ID() string                  { return "fake" }
func (p *fakeProcess) Wait()                       { <-p.done }
func (p *fakeProcess) Signal(syscall.Signal) error { return nil }
func (p *fakeProcess) Release() Exit               { return Exit{} }
