//go:build linux

package credentials

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-acp/dsh-acp/internal/acptest"
)

// term is the controlling side of a pty (acptest.Terminal) whose other
// end, slave, Login uses.
type term struct {
	*acptest.Terminal
	slave *os.File
}

func newTerm(t *testing.T) *term {
	t.Helper()
	tm, slave := acptest.OpenTerminal(t)
	return &term{Terminal: tm, slave: slave}
}

// expect waits (20 s) for s in what the terminal showed since the last
// expect.
func (tm *term) expect(s string) { tm.Await(s) }

func (tm *term) typeIn(s string) { tm.Type(s) }

func (tm *term) shown() string { return tm.Output() }

func echoing(t *testing.T, f *os.File) bool {
	t.Helper()
	tio, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
	if err != nil {
		t.Fatal(err)
	}
	return tio.Lflag&unix.ECHO != 0
}

func runLogin(l *Login, ctx context.Context) <-chan error {
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	return done
}

func wait(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("login did not end within 30 s")
		return nil
	}
}

// On a terminal: the base URL and model are offered and editable, the key
// is read with echo off (and echo comes back), checked and stored.
func TestLoginOnATerminal(t *testing.T) {
	srv := fakeProvider(t, testKey)
	tm := newTerm(t)
	store := NewStore(filepath.Join(t.TempDir(), "dsh-acp"))
	l := &Login{In: tm.slave, Out: tm.slave, Store: store, BaseURL: "https://offered.example", Model: "m1", Client: srv.Client()}
	done := runLogin(l, context.Background())

	tm.expect("Base URL [https://offered.example]: ")
	tm.typeIn("not a url\n")
	tm.expect("want an http:// or https:// URL")
	tm.expect("Base URL [https://offered.example]: ")
	tm.typeIn(srv.URL + "/v1\n")
	tm.expect("Model [m1]: ")
	tm.typeIn("\n") // keep m1
	tm.expect("API key (typing is hidden): ")
	if echoing(t, tm.slave) {
		t.Error("the terminal echoes while the key is asked for")
	}
	tm.typeIn(testKey + "\n")
	tm.expect("ok (2 models)")
	if err := wait(t, done); err != nil {
		t.Fatalf("Run = %v\n%s", err, tm.shown())
	}
	if strings.Contains(tm.shown(), testKey[:10]) {
		t.Errorf("the key was echoed:\n%s", tm.shown())
	}
	if !echoing(t, tm.slave) {
		t.Error("echo was not restored")
	}
	c, err := store.Load()
	if err != nil || c != (Credential{APIKey: testKey, BaseURL: srv.URL + "/v1", Model: "m1"}) {
		t.Errorf("stored %v, %v", c, err)
	}
}

// On a terminal, a model the provider does not list is not stored as is:
// the user picks one it lists, or types the same one again to keep it.
func TestLoginOnATerminalAsksForAListedModel(t *testing.T) {
	srv := fakeProvider(t, testKey)
	for _, tt := range []struct {
		answers []string
		want    string
	}{
		{[]string{"m2"}, "m2"},
		{[]string{""}, "m1"},
		{[]string{"typo", "typo"}, "typo"},
	} {
		t.Run(tt.want, func(t *testing.T) {
			tm := newTerm(t)
			store := NewStore(filepath.Join(t.TempDir(), "dsh-acp"))
			l := &Login{In: tm.slave, Out: tm.slave, Store: store, BaseURL: srv.URL + "/v1", Model: "no-such-model", Client: srv.Client()}
			done := runLogin(l, context.Background())
			tm.expect("Base URL")
			tm.typeIn("\n")
			tm.expect("Model [no-such-model]: ")
			tm.typeIn("\n")
			tm.expect("API key (typing is hidden): ")
			tm.typeIn(testKey + "\n")
			tm.expect(`The provider does not list the model "no-such-model"; it lists m1, m2.`)
			for _, a := range tt.answers {
				tm.expect("again to keep it) [m1]: ")
				tm.typeIn(a + "\n")
			}
			if err := wait(t, done); err != nil {
				t.Fatalf("Run = %v\n%s", err, tm.shown())
			}
			c, err := store.Load()
			if err != nil || c.Model != tt.want {
				t.Errorf("stored %v, %v; want the model %q", c, err, tt.want)
			}
		})
	}
}

// Ctrl-C (the context ending) while the key is asked for restores echo.
func TestLoginCancelledRestoresEcho(t *testing.T) {
	tm := newTerm(t)
	store := NewStore(filepath.Join(t.TempDir(), "dsh-acp"))
	ctx, cancel := context.WithCancel(context.Background())
	l := &Login{In: tm.slave, Out: tm.slave, Store: store, BaseURL: "https://x.example", Model: "m"}
	done := runLogin(l, ctx)
	tm.expect("Base URL [https://x.example]: ")
	tm.typeIn("\n")
	tm.expect("Model [m]: ")
	tm.typeIn("\n")
	tm.expect("API key (typing is hidden): ")
	cancel()
	if err := wait(t, done); !errors.Is(err, ErrCancelled) {
		t.Errorf("Run = %v, want ErrCancelled", err)
	}
	if !echoing(t, tm.slave) {
		t.Error("echo is still off after the login was cancelled")
	}
	if _, err := store.Load(); !errors.Is(err, ErrNotFound) {
		t.Errorf("a cancelled login stored something: %v", err)
	}
}

// A provider without GET /models: the key is stored only if the user says
// so.
func TestLoginWithoutModelsEndpoint(t *testing.T) {
	srv := fakeProvider(t, testKey)
	for _, answer := range []string{"y", "n"} {
		t.Run(answer, func(t *testing.T) {
			tm := newTerm(t)
			store := NewStore(filepath.Join(t.TempDir(), "dsh-acp"))
			l := &Login{In: tm.slave, Out: tm.slave, Store: store, BaseURL: srv.URL + "/nomodels", Model: "m", Client: srv.Client()}
			done := runLogin(l, context.Background())
			tm.expect("Base URL")
			tm.typeIn("\n")
			tm.expect("Model")
			tm.typeIn("\n")
			tm.expect("API key (typing is hidden): ")
			tm.typeIn(testKey + "\n")
			tm.expect("Store the key without a check? [y/N]: ")
			tm.typeIn(answer + "\n")
			err := wait(t, done)
			_, lerr := store.Load()
			if answer == "y" && (err != nil || lerr != nil) {
				t.Errorf("Run = %v, Load = %v", err, lerr)
			}
			if answer == "n" && (!errors.Is(err, ErrCancelled) || !errors.Is(lerr, ErrNotFound)) {
				t.Errorf("Run = %v, Load = %v", err, lerr)
			}
		})
	}
}
