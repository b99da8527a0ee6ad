package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
)

// checkReplies runs lines through a connection whose handler answers
// every request (some from the Preempter, some twice) and checks that each
// request got exactly one reply, and notifications and responses none.
func checkReplies(t *testing.T, lines []string) {
	var out bytes.Buffer
	pre := &recorder{take: func(r *Request) bool {
		if r.IsNotification() || r.Method != "initialize" {
			return r.IsNotification()
		}
		r.Reply(map[string]bool{"preempted": true}, nil)
		return true
	}}
	c := NewConn(strings.NewReader(strings.Join(lines, "\n")+"\n"), NewOutput(&out, nil), pre, Options{Handler: func(r *Request) {
		r.Reply(map[string]bool{"ok": true}, nil)
		r.Reply(map[string]bool{"again": true}, nil)
	}})
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if n := c.Wait(ctx); n != 0 {
		t.Fatalf("%d requests unanswered", n)
	}
	taken := map[string]int{}
	for _, r := range pre.seen {
		if !r.IsNotification() {
			taken[idKey(r.ID)]++
		}
	}
	results, errors := map[string]int{}, 0
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if l == "" {
			continue
		}
		var reply struct {
			ID     json.RawMessage
			Result json.RawMessage
			Error  json.RawMessage
		}
		if err := json.Unmarshal([]byte(l), &reply); err != nil || !utf8.ValidString(l) {
			t.Fatalf("a reply that is not JSON text: %q", l)
		}
		if reply.Result != nil {
			results[idKey(reply.ID)]++
		} else {
			errors++
		}
	}
	strict, others := map[string]int{}, 0
	for _, l := range lines {
		switch kind, id := acptest.StrictKind(l); kind {
		case "request":
			strict[id]++
		case "other":
			others++
		}
	}
	for id, n := range taken {
		if results[id] != n {
			t.Errorf("id %s: %d requests taken, %d results", id, n, results[id])
		}
	}
	for id, n := range strict {
		if taken[id] < n {
			t.Errorf("id %s: %d well-formed requests sent, %d taken", id, n, taken[id])
		}
	}
	for id, n := range results {
		if taken[id] == 0 {
			t.Errorf("id %s: %d results for no request", id, n)
		}
	}
	if errors > others {
		t.Errorf("%d error replies for %d malformed lines: a notification or a response was answered", errors, others)
	}
}

// Exactly one reply per request, whatever surrounds it: mutated lines
// (invalid UTF-8 in keys and values, cut lines, changed bytes), reused ids
// and notification floods. The seeds and a fixed set of random programs run
// in the suite; `go test -fuzz FuzzOneReplyPerRequest` explores further.
func FuzzOneReplyPerRequest(f *testing.F) {
	for i := range 24 {
		f.Add([]byte(fmt.Sprintf("program-%d", i)))
	}
	f.Add([]byte("\xff\xc0method"))
	f.Fuzz(func(t *testing.T, program []byte) { checkReplies(t, acptest.MutatedLines(program)) })
}
