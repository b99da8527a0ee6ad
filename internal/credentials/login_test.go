package credentials

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pipeWith returns a pipe's read end that yields input then EOF.
func pipeWith(t *testing.T, input string) *os.File {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	go func() {
		_, _ = w.WriteString(input)
		w.Close()
	}()
	return r
}

func TestLoginPiped(t *testing.T) {
	srv := fakeProvider(t, testKey)
	tests := []struct {
		name    string
		input   string
		wantErr func(error) bool
	}{
		{"the key on the first line", testKey + "\n", nil},
		{"a key without a newline", testKey, nil},
		{"a wrong key", "sk-wrong-key-1234567890\n", func(err error) bool {
			var he *HTTPError
			return errors.As(err, &he) && he.Refused()
		}},
		{"no input", "", func(err error) bool { return errors.Is(err, ErrCancelled) }},
		{"a malformed key", "two words\n", func(err error) bool { return err != nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := NewStore(filepath.Join(t.TempDir(), "dsh-acp"))
			var out bytes.Buffer
			l := &Login{In: pipeWith(t, tt.input), Out: &out, Store: store, BaseURL: srv.URL + "/v1", Model: "m2", Client: srv.Client()}
			err := l.Run(context.Background())
			if strings.Contains(out.String(), "sk-wrong-key") || strings.Contains(out.String(), testKey) ||
				(err != nil && strings.Contains(err.Error(), "sk-wrong-key")) {
				t.Errorf("a key was shown: %q / %v", out.String(), err)
			}
			c, lerr := store.Load()
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Run = %v\n%s", err, out.String())
				}
				if lerr != nil || c != (Credential{APIKey: testKey, BaseURL: srv.URL + "/v1", Model: "m2"}) {
					t.Errorf("stored %v, %v", c, lerr)
				}
				return
			}
			if !tt.wantErr(err) {
				t.Errorf("Run = %v", err)
			}
			if !errors.Is(lerr, ErrNotFound) {
				t.Errorf("a failed login stored %v (%v)", c, lerr)
			}
		})
	}
}

// Piped, a model the provider does not list is refused, naming those it
// lists, and nothing is stored.
func TestLoginPipedRefusesAnUnlistedModel(t *testing.T) {
	srv := fakeProvider(t, testKey)
	store := NewStore(filepath.Join(t.TempDir(), "dsh-acp"))
	var out bytes.Buffer
	l := &Login{In: pipeWith(t, testKey+"\n"), Out: &out, Store: store, BaseURL: srv.URL + "/v1", Model: "no-such-model", Client: srv.Client()}
	err := l.Run(context.Background())
	var ue *UnlistedModelError
	if !errors.As(err, &ue) || err.Error() != `the provider does not list the model "no-such-model"; it lists m1, m2` {
		t.Errorf("Run = %v", err)
	}
	if _, lerr := store.Load(); !errors.Is(lerr, ErrNotFound) {
		t.Errorf("a refused login stored something: %v", lerr)
	}
}

// A hostile credential directory is reported before anything is read.
func TestLoginRefusesHostileStorageFirst(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dsh-acp")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	in := pipeWith(t, testKey+"\n")
	var out bytes.Buffer
	l := &Login{In: in, Out: &out, Store: NewStore(dir), BaseURL: "http://127.0.0.1:1", Model: "m"}
	if err := l.Run(context.Background()); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "writable") {
		t.Errorf("Run = %v, want ErrUnsafe", err)
	}
	if strings.Contains(out.String(), "Checking") {
		t.Errorf("the key was checked before the storage was: %s", out.String())
	}
}
