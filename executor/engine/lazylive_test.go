package engine

import (
	"bytes"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
)

// A Run's live delivery starts with the first output: a silent command
// costs no delivery goroutine; output is delivered in order, all of it by
// the time finish returns.
func TestLazyLive(t *testing.T) {
	var got bytes.Buffer
	z := &lazyLive{observe: func(c executor.Chunk) { got.Write(c.Data) }}
	z.finish()
	if z.lv != nil {
		t.Fatal("a command without output started a delivery goroutine")
	}
	z = &lazyLive{observe: func(c executor.Chunk) { got.Write(c.Data) }}
	z.push(executor.Stdout, []byte("ab"))
	z.push(executor.Stderr, []byte("cd"))
	z.finish()
	if got.String() != "abcd" {
		t.Errorf("delivered %q, want abcd", got.String())
	}
}

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
