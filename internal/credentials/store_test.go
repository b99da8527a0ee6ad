package credentials

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const testKey = "sk-test-0123456789abcdef"

func testCred(key string) Credential {
	return Credential{APIKey: key, BaseURL: "https://api.example.com/v1", Model: "m1"}
}

func TestDefaultDir(t *testing.T) {
	tests := []struct {
		name, xdg, home, want string
		fails                 bool
	}{
		{"absolute XDG_CONFIG_HOME", "/x/cfg", "/home/u", "/x/cfg/dsh-acp", false},
		{"relative XDG_CONFIG_HOME is ignored", "rel/cfg", "/home/u", "/home/u/.config/dsh-acp", false},
		{"unset XDG_CONFIG_HOME", "", "/home/u", "/home/u/.config/dsh-acp", false},
		{"no usable home", "rel", "", "", true},
		{"relative home", "", "home", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"XDG_CONFIG_HOME": tt.xdg, "HOME": tt.home}
			got, err := DefaultDir(func(k string) string { return env[k] })
			if (err != nil) != tt.fails || got != tt.want {
				t.Errorf("DefaultDir = %q, %v; want %q (fails %v)", got, err, tt.want, tt.fails)
			}
		})
	}
}

func TestSaveLoadRemove(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "config", "dsh-acp") // parent missing too
	s := NewStore(dir)
	if _, err := s.Load(); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Load before Save = %v, want ErrNotFound", err)
	}
	if _, err := os.Lstat(dir); err == nil {
		t.Fatal("Load created the directory")
	}
	want := testCred(testKey)
	if err := s.Save(want); err != nil {
		t.Fatal(err)
	}
	assertMode(t, dir, 0o700)
	assertMode(t, s.Path(), 0o600)
	got, err := s.Load()
	if err != nil || got != want {
		t.Fatalf("Load = %v, %v; want %v", got, err, want)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the credential file", len(entries))
	}
	if err := s.Save(testCred("sk-second-key-000000")); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Load(); got.APIKey != "sk-second-key-000000" {
		t.Errorf("after a second Save, key %q", got.APIKey)
	}
	if err := s.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load after Remove = %v", err)
	}
	if err := s.Remove(); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Remove = %v, want ErrNotFound", err)
	}
}

func assertMode(t *testing.T, p string, want os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != want {
		t.Errorf("%s: mode %04o, want %04o", p, fi.Mode().Perm(), want)
	}
}

func TestSaveRefusesBadCredentials(t *testing.T) {
	s := NewStore(filepath.Join(t.TempDir(), "dsh-acp"))
	for _, c := range []Credential{
		{APIKey: "", BaseURL: "https://x"},
		{APIKey: "sk-with blank-0000", BaseURL: "https://x"},
		{APIKey: "line\nbreak", BaseURL: "https://x"},
		{APIKey: testKey, BaseURL: "ftp://x"},
		{APIKey: testKey, BaseURL: "https://user:pw@x"},
		{APIKey: testKey, BaseURL: "relative/path"},
		{APIKey: testKey, BaseURL: "https://x", Model: "two words"},
	} {
		err := s.Save(c)
		if err == nil {
			t.Errorf("Save(%v) succeeded", c)
			continue
		}
		if c.APIKey != "" && strings.Contains(err.Error(), c.APIKey) {
			t.Errorf("error %q holds the key", err)
		}
	}
	if _, err := os.Lstat(s.Path()); err == nil {
		t.Error("a refused credential was written")
	}
}

// A hostile directory or file is refused by Load, Save and Remove, and
// nothing is written through it.
func TestHostileStorage(t *testing.T) {
	tests := []struct {
		name  string
		plant func(t *testing.T, dir string)
	}{
		{"directory is a symlink", func(t *testing.T, dir string) {
			target := t.TempDir()
			mustSaveIn(t, target)
			if err := os.Symlink(target, dir); err != nil {
				t.Fatal(err)
			}
		}},
		{"directory is group-writable", func(t *testing.T, dir string) {
			mustSaveIn(t, dir)
			chmod(t, dir, 0o770)
		}},
		{"directory is world-writable", func(t *testing.T, dir string) {
			mustSaveIn(t, dir)
			chmod(t, dir, 0o777)
		}},
		{"directory belongs to another user", func(t *testing.T, dir string) {
			mustSaveIn(t, dir)
			chownAway(t, dir)
		}},
		{"file is a symlink", func(t *testing.T, dir string) {
			other := filepath.Join(t.TempDir(), "elsewhere")
			if err := os.WriteFile(other, []byte(`{"version":1,"apiKey":"sk-planted-00000000","baseURL":"https://evil.example"}`), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(other, filepath.Join(dir, FileName)); err != nil {
				t.Fatal(err)
			}
		}},
		{"file is group-writable", func(t *testing.T, dir string) {
			mustSaveIn(t, dir)
			chmod(t, filepath.Join(dir, FileName), 0o620)
		}},
		{"file belongs to another user", func(t *testing.T, dir string) {
			mustSaveIn(t, dir)
			chownAway(t, filepath.Join(dir, FileName))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "dsh-acp")
			tt.plant(t, dir)
			s := NewStore(dir)
			if _, err := s.Load(); !errors.Is(err, ErrUnsafe) {
				t.Errorf("Load = %v, want ErrUnsafe", err)
			}
			if strings.HasPrefix(tt.name, "directory") {
				if err := s.Save(testCred("sk-new-key-0000000")); !errors.Is(err, ErrUnsafe) {
					t.Errorf("Save = %v, want ErrUnsafe", err)
				}
				if err := s.Remove(); !errors.Is(err, ErrUnsafe) {
					t.Errorf("Remove = %v, want ErrUnsafe", err)
				}
			}
		})
	}
}

func mustSaveIn(t *testing.T, dir string) {
	t.Helper()
	if err := NewStore(dir).Save(testCred(testKey)); err != nil {
		t.Fatal(err)
	}
}

func chmod(t *testing.T, p string, m os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
}

func chownAway(t *testing.T, p string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file to another user")
	}
	if err := os.Lchown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
}

// A file others may read but not write is tightened to 0600 and used.
func TestLoadTightensReadableFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dsh-acp")
	mustSaveIn(t, dir)
	chmod(t, filepath.Join(dir, FileName), 0o644)
	chmod(t, dir, 0o755)
	if _, err := NewStore(dir).Load(); err != nil {
		t.Fatal(err)
	}
	assertMode(t, filepath.Join(dir, FileName), 0o600)
	assertMode(t, dir, 0o700)
}

func TestLoadBadFiles(t *testing.T) {
	tests := []struct{ name, content string }{
		{"not JSON", testKey + "\n"},
		{"another version", `{"version":2,"apiKey":"` + testKey + `","baseURL":"https://x"}`},
		{"no key", `{"version":1,"baseURL":"https://x"}`},
		{"bad base URL", `{"version":1,"apiKey":"` + testKey + `","baseURL":"x"}`},
		{"too long", `{"version":1,"apiKey":"` + testKey + `","pad":"` + strings.Repeat("a", maxFile) + `"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "dsh-acp")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, FileName), []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := NewStore(dir).Load()
			if err == nil || errors.Is(err, ErrNotFound) {
				t.Fatalf("Load = %v, want an error", err)
			}
			if strings.Contains(err.Error(), testKey[3:10]) {
				t.Errorf("error %q shows the key", err)
			}
		})
	}
}

// Readers racing a writer see the old credential or the new one, never an
// error or a mix.
func TestSaveIsAtomic(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dsh-acp")
	s := NewStore(dir)
	keys := []string{"sk-aaaaaaaaaaaaaaaa", "sk-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"}
	if err := s.Save(testCred(keys[0])); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 1)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := s.Load()
				if err == nil && c.APIKey != keys[0] && c.APIKey != keys[1] {
					err = fmt.Errorf("read a key that was never written: %q", c.APIKey)
				}
				if err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
			}
		}()
	}
	for i := range 40 {
		if err := s.Save(testCred(keys[i%2])); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

func TestCredentialNeverPrintsTheKey(t *testing.T) {
	c := testCred(testKey)
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s", c, c, c, c), c.String()} {
		if strings.Contains(s, testKey) {
			t.Errorf("%q shows the key", s)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"version":1,"apiKey":"sk-x-00000000","baseURL":"https://x","model":"m"}`))
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decode(strings.NewReader(string(b)), "/p")
		if err == nil {
			if verr := c.Validate(); verr != nil {
				t.Fatalf("decode accepted an invalid credential: %v", verr)
			}
		}
	})
}
