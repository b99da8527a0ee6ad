package acp_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/acp"
	"github.com/dsh-acp/dsh-acp/executor/local"
	"github.com/dsh-acp/dsh-acp/replay"
	"github.com/dsh-acp/dsh-acp/tools"
)

// BenchmarkReplay10k measures session/load of a generated 10 000-call
// journal through the in-process server (ACP bytes written to a pipe and
// read back), against reading and decoding the same journal, and reports
// the ratio (target ≤ 1.5) and the time to the first replayed update.
func BenchmarkReplay10k(b *testing.B) {
	state := b.TempDir()
	store, err := replay.OpenStore(state)
	if err != nil {
		b.Fatal(err)
	}
	id := replay.NewSessionID()
	path, _ := store.Path(id)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	if err := replay.GenerateJournal(w, 10000, id, state); err != nil {
		b.Fatal(err)
	}
	w.Flush()
	f.Close()
	ex, err := local.New(local.Config{StateDir: state})
	if err != nil {
		b.Fatal(err)
	}
	cfg := acp.Config{Executor: ex, Tools: tools.NewBash(ex, tools.Config{}), Store: store}

	var decode, load, first time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := replay.LoadFile(path); err != nil {
			b.Fatal(err)
		}
		decode += time.Since(start)

		l, f, err := loadOnce(cfg, id, filepath.Dir(path))
		if err != nil {
			b.Fatal(err)
		}
		load += l
		first += f
	}
	ratio := float64(load) / float64(decode)
	b.ReportMetric(ratio, "load/decode")
	b.ReportMetric(float64(first.Microseconds())/float64(b.N), "µs-to-first-update")
	b.Logf("replay %v vs decode %v per run: %.2f× (target ≤ 1.5×); first update after %v",
		load/time.Duration(b.N), decode/time.Duration(b.N), ratio, first/time.Duration(b.N))
}

// loadOnce serves one connection: initialize, session/load, EOF.
func loadOnce(cfg acp.Config, id, cwd string) (total, first time.Duration, err error) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- acp.Serve(context.Background(), inR, outW, cfg); outW.Close() }()
	r := bufio.NewReaderSize(outR, 1<<20)
	fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"_meta":{"terminal_output":true}}}}`+"\n")
	if _, err := r.ReadBytes('\n'); err != nil {
		return 0, 0, err
	}
	start := time.Now()
	fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":%q,"cwd":%q,"mcpServers":[]}}`+"\n", id, cwd)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return 0, 0, err
		}
		if first == 0 {
			first = time.Since(start)
		}
		if bytes.HasPrefix(line, []byte(`{"id":2,`)) || bytes.Contains(line[:min(len(line), 40)], []byte(`"id":2`)) {
			if bytes.Contains(line, []byte(`"error"`)) {
				return 0, 0, fmt.Errorf("session/load: %s", line)
			}
			break
		}
	}
	total = time.Since(start)
	inW.Close()
	go io.Copy(io.Discard, r)
	return total, first, <-done
}
