package ingress

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
)

// sdkPeer runs the real SDK connection behind a Guard: input lines go in,
// every line written to the shared LockedWriter comes out.
type sdkPeer struct {
	in    *io.PipeWriter
	lines *bufio.Scanner
	conn  *acpsdk.Connection
}

func newSDKPeer(t *testing.T, opts Options) *sdkPeer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	lw := NewLockedWriter(outW)
	g := New(inR, lw, opts)
	echo := func(_ context.Context, method string, params json.RawMessage) (any, *acpsdk.RequestError) {
		return map[string]any{"method": method, "paramsLen": len(params)}, nil
	}
	conn := acpsdk.NewConnection(echo, lw, g.Reader())
	go func() { _ = g.Run(context.Background()) }()
	t.Cleanup(func() {
		_ = inW.Close()
		<-g.Done()
		<-conn.Done()
		_ = outR.Close()
	})
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 1<<20)
	return &sdkPeer{in: inW, lines: sc, conn: conn}
}

// write feeds lines from a goroutine (the SDK's replies must be read
// meanwhile); a write error shows as missing output lines.
func (p *sdkPeer) write(lines ...string) {
	go func() {
		for _, l := range lines {
			if _, err := io.WriteString(p.in, l+"\n"); err != nil {
				return
			}
		}
	}()
}

// read returns the next n output lines, sorted (the SDK answers requests
// concurrently).
func (p *sdkPeer) read(t *testing.T, n int) []string {
	t.Helper()
	var got []string
	for len(got) < n && p.lines.Scan() {
		got = append(got, p.lines.Text())
	}
	if len(got) < n {
		t.Fatalf("got %d output lines, want %d: %v", len(got), n, p.lines.Err())
	}
	sort.Strings(got)
	return got
}

func TestSDKKeepsServingBehindTheGuard(t *testing.T) {
	p := newSDKPeer(t, Options{MaxLine: 1000})
	p.write(
		`{"jsonrpc":"2.0","id":1,"method":"a","params":{}}`,
		`{not json`,
		`[{"jsonrpc":"2.0","id":2,"method":"b"}]`,
		`{"jsonrpc":"2.0","id":{"x":1},"method":"c"}`,
		request(3, 5000),
		`{"jsonrpc":"2.0","id":4,"method":"d","params":{"k":1}}`,
	)
	want := []string{
		`{"jsonrpc":"2.0","id":1,"result":{"method":"a","paramsLen":2}}`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"Invalid request","data":{"error":"line too long","limit":1000}}}`,
		`{"jsonrpc":"2.0","id":4,"result":{"method":"d","paramsLen":7}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request","data":{"error":"batch requests are not supported"}}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request","data":{"error":"id must be a string, a number or null"}}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error","data":{"error":"invalid JSON"}}}`,
	}
	sort.Strings(want)
	got := p.read(t, len(want))
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("output\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSDKLineLimit checks SDKMaxLine against the real SDK: the longest line
// the Guard forwards is served, and one byte more is answered by the Guard
// instead of closing the SDK's connection.
func TestSDKLineLimit(t *testing.T) {
	p := newSDKPeer(t, Options{MaxLine: 64 << 20})
	p.write(request(1, SDKMaxLine), request(2, SDKMaxLine+1), `{"jsonrpc":"2.0","id":3,"method":"after"}`)
	got := p.read(t, 3)
	big := request(1, SDKMaxLine)
	paramsLen := len(big) - strings.Index(big, `{"p"`) - 1
	want := []string{
		fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"result":{"method":"session/prompt","paramsLen":%d}}`, paramsLen),
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"Invalid request","data":{"error":"line too long","limit":10485759}}}`,
		`{"jsonrpc":"2.0","id":3,"result":{"method":"after","paramsLen":0}}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("output\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	select {
	case <-p.conn.Done():
		t.Error("the SDK connection closed")
	default:
	}
}

// TestSDKLineLimitIsTight shows why the Guard exists: without it, one byte
// over SDKMaxLine closes the SDK's connection.
func TestSDKLineLimitIsTight(t *testing.T) {
	in := strings.NewReader(request(1, SDKMaxLine+1) + "\n" + `{"jsonrpc":"2.0","id":2,"method":"after"}` + "\n")
	served := make(chan string, 2)
	handler := func(_ context.Context, method string, _ json.RawMessage) (any, *acpsdk.RequestError) {
		served <- method
		return nil, nil
	}
	conn := acpsdk.NewConnection(handler, io.Discard, in)
	<-conn.Done()
	select {
	case m := <-served:
		t.Errorf("the SDK served %q after an over-long line", m)
	default:
	}
}
