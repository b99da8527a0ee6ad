package acp

import (
	"runtime"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/replay"
)

// A checkpoint of a card's 2 MiB of live output is journaled from the
// chunks as they came, without joining them or building its line: the
// flush allocates a small fraction of the output, and the journal reads
// the whole output back.
func TestCheckpointAllocatesLittle(t *testing.T) {
	store, err := replay.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	j, err := store.Create("s1", "/w", "test")
	if err != nil {
		t.Fatal(err)
	}
	var c checkpoints
	c.write = func(ev event.Event) {
		if err := j.Append(ev); err != nil {
			t.Error(err)
		}
	}
	defer c.stop()
	chunk := strings.Repeat("printable output: the quick brown fox 0123456789\n", 1<<10)
	var want strings.Builder
	for range 2 << 20 / len(chunk) {
		c.output("call_1", chunk)
		want.WriteString(chunk)
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	c.flush()
	runtime.ReadMemStats(&m1)
	if got := m1.TotalAlloc - m0.TotalAlloc; got > 256<<10 {
		t.Errorf("a checkpoint of %d bytes allocated %d bytes", want.Len(), got)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := store.Load("s1")
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for _, ev := range l.Events {
		if cp, ok := ev.(event.OutputCheckpoint); ok {
			got.WriteString(cp.Data)
		}
	}
	if got.String() != want.String() {
		t.Errorf("read back %d bytes of checkpointed output, want %d", got.Len(), want.Len())
	}
}
