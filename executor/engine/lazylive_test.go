package engine

import (
	"bytes"
	"regexp"
	"runtime"
	"testing"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/executor"
)

// A Run's live delivery starts with the first output: a silent command
// costs no delivery goroutine, and closing it returns at once.
func TestLiveStartsWithTheFirstOutput(t *testing.T) {
	c := newCapture(captureOpts{size: 1024, streams: true, log: zap.NewNop()})
	var got bytes.Buffer
	l := newLive(func(ch executor.Chunk) { got.Write(ch.Data) }, c)
	if liveRunning() {
		t.Fatal("a delivery goroutine runs before any output")
	}
	c.write(executor.Stdout, []byte("hi"))
	if !liveRunning() {
		t.Error("no delivery goroutine after the first output")
	}
	l.close()
	<-l.finished
	if got.String() != "hi" {
		t.Errorf("delivered %q, want hi", got.String())
	}

	silent := newLive(func(executor.Chunk) { t.Error("a silent command delivered a chunk") }, newCapture(captureOpts{size: 1024, streams: true, log: zap.NewNop()}))
	silent.close()
	<-silent.finished
}

// liveRunning reports whether a delivery goroutine exists: one in live.run,
// or created for it and not yet run (its frame is then a go statement's
// wrapper in the function that started it).
func liveRunning() bool {
	buf := make([]byte, 1<<20)
	return deliveryFrame.Match(buf[:runtime.Stack(buf, true)])
}

var deliveryFrame = regexp.MustCompile(`engine\.(\(\*live\)\.run|newLive\.gowrap|\(\*live\)\.wrote\.gowrap)`)

// Run with an observer delivers a command's output, and a silent command's
// Run needs no delivery at all.
func TestRunObserverLazy(t *testing.T) {
	e := newTestExecutor(t, Config{})
	var seen bytes.Buffer
	obs := func(c executor.Chunk) { seen.Write(c.Data) }
	if _, err := e.Run(t.Context(), resolve(t, e, "true"), obs); err != nil {
		t.Fatal(err)
	}
	if seen.Len() != 0 {
		t.Errorf("a silent command delivered %q", seen.String())
	}
	if _, err := e.Run(t.Context(), resolve(t, e, "echo hi"), obs); err != nil {
		t.Fatal(err)
	}
	if seen.String() != "hi\n" {
		t.Errorf("delivered %q, want hi", seen.String())
	}
}
