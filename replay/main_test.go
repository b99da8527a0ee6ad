package replay

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// helperEnv makes the test binary act as a second process (see
// runLockHelper) instead of running the tests.
const helperEnv = "REPLAY_TEST_LOCK_HELPER"

func TestMain(m *testing.M) {
	if state := os.Getenv(helperEnv); state != "" {
		os.Exit(runLockHelper(state, "s1"))
	}
	os.Exit(m.Run())
}

// runLockHelper opens session id of stateDir for appending, reports
// "locked" or "refused: <error>" on stdout, holds the journal until its
// stdin closes, and exits 0 (locked), 3 (ErrLocked) or 1.
func runLockHelper(stateDir, id string) int {
	s, err := OpenStore(stateDir)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	j, err := s.OpenAppend(id)
	switch {
	case errors.Is(err, ErrLocked):
		fmt.Println("refused:", err)
		return 3
	case err != nil:
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("locked")
	io.Copy(io.Discard, os.Stdin)
	if err := j.Close(); err != nil {
		return 1
	}
	return 0
}

// clock is a deterministic clock: every reading is 1ms after the previous.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 5, 1, 12, 3, 4, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

// newTestStore opens a store in a fresh state directory.
func newTestStore(t *testing.T) (*Store, string) {
	t.Helper()
	state := t.TempDir()
	s, err := OpenStore(state, WithClock(newClock().now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, state
}

func mustCreate(t *testing.T, s *Store, id, cwd string) *Journal {
	t.Helper()
	j, err := s.Create(id, cwd, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

func mustAppend(t *testing.T, j *Journal, evs ...event.Event) {
	t.Helper()
	for _, ev := range evs {
		if err := j.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 8<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func appendFile(t *testing.T, path, data string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func scanPath(path string, fn func(Record) error) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Scan(f, fn)
}
