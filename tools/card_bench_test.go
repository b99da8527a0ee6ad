package tools

import (
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
)

// BenchmarkCardStream streams 1 MiB of output to a card in 64 KiB chunks:
// plain text, coloured text (CSI only: the string-sequence filter's fast
// path cannot take it), and text past the cap (the tail ring).
func BenchmarkCardStream(b *testing.B) {
	plain := []byte(strings.Repeat("compiling module github.com/x/y … ok\n", 2000)[:64<<10])
	coloured := []byte(strings.Repeat("\x1b[32mok\x1b[0m   github.com/x/y 0.01s\n", 2000)[:64<<10])
	for _, bc := range []struct {
		name  string
		chunk []byte
		limit int
	}{
		{"plain", plain, DefaultCardOutputLimit},
		{"coloured", coloured, DefaultCardOutputLimit},
		{"past_cap", plain, 4096},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(16 * int64(len(bc.chunk)))
			for range b.N {
				c := newCardStream(bc.limit, func(string) {})
				for range 16 {
					c.observe(executor.Chunk{Stream: executor.Stdout, Data: bc.chunk})
				}
				c.close("", "")
			}
		})
	}
}
