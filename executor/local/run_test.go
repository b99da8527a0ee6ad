package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-acp/dsh-acp/executor"
)

func TestRunEnvironment(t *testing.T) {
	t.Setenv("DSH_TEST_API_KEY", "k1")
	t.Setenv("DSH_TEST_PLAIN", "plain")
	t.Setenv("DSH_TEST_ALLOWED_TOKEN", "allowed")
	t.Setenv("DSH_TEST_ALLOWED_LEAK", "has-the-daemon-key-inside")
	t.Setenv("DSH_TEST_URL", "https://user:pw@example.com/x")
	t.Setenv("TERM", "xterm-256color")
	e := newTestExecutor(t, Config{
		AllowEnv:     []string{"DSH_TEST_ALLOWED_TOKEN", "DSH_TEST_ALLOWED_LEAK"},
		SecretValues: []string{"the-daemon-key"},
	})
	spec := resolve(t, e, "env")
	spec.Env = map[string]string{"HOOK_TOKEN": "from-hook", "PAGER": "less"}
	res := run(t, e, spec)
	got := map[string]string{}
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			got[k] = v
		}
	}
	// The allowed token reaches the command; its value is redacted from
	// the output (it is a secret only the allow list let through).
	want := map[string]string{
		"DSH_TEST_PLAIN": "plain", "DSH_TEST_ALLOWED_TOKEN": "[redacted: DSH_TEST_ALLOWED_TOKEN]", "HOOK_TOKEN": "from-hook",
		"PAGER": "less", "GIT_PAGER": "cat", "GH_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "GIT_EDITOR": "true",
		"NO_COLOR": "1", "TERM": "dumb", "CI": "1", "DEBIAN_FRONTEND": "noninteractive", "DSH_ACP": "1",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s=%q, want %q", k, got[k], v)
		}
	}
	for _, k := range []string{"DSH_TEST_API_KEY", "DSH_TEST_ALLOWED_LEAK", "DSH_TEST_URL"} {
		if v, ok := got[k]; ok {
			t.Errorf("%s=%q leaked", k, v)
		}
	}
}

// TestRunSlowObserver blocks the observer until the command has finished on
// its own: the command must not wait for it, and what the observer missed
// is counted.
func TestRunSlowObserver(t *testing.T) {
	e := newTestExecutor(t, Config{})
	marker := filepath.Join(t.TempDir(), "done")
	const total = 8 << 20
	release := make(chan struct{})
	var got, dropped int64
	observe := func(c executor.Chunk) {
		<-release
		got += int64(len(c.Data))
		dropped += c.Dropped
	}
	spec := resolve(t, e, fmt.Sprintf("head -c %d /dev/zero; touch %s", total, marker))
	spec.Timeout = time.Minute
	done := make(chan executor.Result)
	go func() {
		res, err := e.Run(context.Background(), spec, observe)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	eventually(t, 30*time.Second, "the command to finish while the observer blocks", func() bool {
		_, err := os.Stat(marker)
		return err == nil
	})
	close(release)
	res := <-done
	if got+dropped != total || dropped == 0 {
		t.Errorf("observed %d + dropped %d, want %d with some dropped", got, dropped, total)
	}
	if res.Dropped+int64(len(res.Combined)) != total {
		t.Errorf("capture saw %d bytes, want %d", res.Dropped+int64(len(res.Combined)), total)
	}
}

func TestRunConcurrent(t *testing.T) {
	e := newTestExecutor(t, Config{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			res, err := e.Run(context.Background(), resolve(t, e, fmt.Sprintf("echo %d", i)), nil)
			if err != nil || string(res.Stdout) != fmt.Sprintf("%d\n", i) {
				t.Errorf("run %d: %q %v", i, res.Stdout, err)
			}
		})
	}
	wg.Wait()
}
