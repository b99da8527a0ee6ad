package credentials

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dsh-acp/dsh-acp/internal/privdir"
)

// FileName is the credential file's name inside its directory.
const FileName = "credentials"

// maxFile bounds what Load reads: a credential is a few hundred bytes.
const maxFile = 64 << 10

// fileVersion is the format of the file; Load refuses another.
const fileVersion = 1

var (
	// ErrNotFound is returned by Load and Remove when no credential is stored.
	ErrNotFound = errors.New("no stored credential")
	// ErrUnsafe is matched by a refusal of a hostile directory or file (it is
	// privdir.ErrUnsafe).
	ErrUnsafe = privdir.ErrUnsafe
)

// DefaultDir is where the credential file lives: $XDG_CONFIG_HOME/dsh-acp
// when XDG_CONFIG_HOME is absolute, else $HOME/.config/dsh-acp. It fails
// when neither gives an absolute path.
func DefaultDir(getenv func(string) string) (string, error) {
	if x := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "dsh-acp"), nil
	}
	home := getenv("HOME")
	if !filepath.IsAbs(home) {
		return "", errors.New("cannot find the config directory: neither XDG_CONFIG_HOME nor HOME is an absolute path")
	}
	return filepath.Join(home, ".config", "dsh-acp"), nil
}

// Store is the credential file in one directory. Its methods may be called
// from several goroutines and processes: a reader sees the old file or the
// new one, never a mix.
type Store struct {
	dir string
}

// NewStore returns the store in dir (absolute; created by Save when missing).
func NewStore(dir string) *Store { return &Store{dir: dir} }

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// Path is the credential file.
func (s *Store) Path() string { return filepath.Join(s.dir, FileName) }

// file is the on-disk form.
type file struct {
	Version int `json:"version"`
	Credential
}

// Load reads the stored credential: ErrNotFound when there is none (the
// directory is not created), an error matching ErrUnsafe for a hostile
// directory or file — including a file its group or others may write. A
// file readable by others is tightened to 0600. An error never holds the
// key.
func (s *Store) Load() (Credential, error) {
	root, err := privdir.OpenExisting(s.dir, privdir.RefuseWritable)
	if errors.Is(err, fs.ErrNotExist) {
		return Credential{}, ErrNotFound
	}
	if err != nil {
		return Credential{}, fmt.Errorf("read credential: %w", err)
	}
	defer root.Close()
	f, st, err := privdir.OpenFile(root, FileName, os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return Credential{}, ErrNotFound
	}
	if err != nil {
		return Credential{}, fmt.Errorf("read credential: %w", err)
	}
	defer f.Close()
	if perm := st.Mode().Perm(); perm&0o022 != 0 {
		return Credential{}, fmt.Errorf("read credential: %w", &privdir.UnsafeError{Path: s.Path(),
			Problem: fmt.Sprintf("is writable by its group or others (mode %04o): remove it and log in again", perm)})
	} else if perm != 0o600 {
		if err := f.Chmod(0o600); err != nil {
			return Credential{}, fmt.Errorf("read credential: tighten %s to 0600: %w", s.Path(), err)
		}
	}
	return decode(io.LimitReader(f, maxFile+1), s.Path())
}

// decode parses a credential file; errors name path and never the key.
func decode(r io.Reader, path string) (Credential, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return Credential{}, fmt.Errorf("read credential %s: %w", path, err)
	}
	if len(b) > maxFile {
		return Credential{}, fmt.Errorf("read credential %s: longer than %d bytes", path, maxFile)
	}
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		// json quotes at most one character of the input, never a value.
		return Credential{}, fmt.Errorf("read credential %s: not a credential file: %w", path, err)
	}
	if f.Version != fileVersion {
		return Credential{}, fmt.Errorf("read credential %s: format version %d, this dsh-acp reads %d", path, f.Version, fileVersion)
	}
	if err := f.Validate(); err != nil {
		return Credential{}, fmt.Errorf("read credential %s: %w", path, err)
	}
	return f.Credential, nil
}

// Save validates c and stores it, replacing any stored credential
// atomically: the file is written 0600 beside the old one, synced and
// renamed over it, and the directory synced. The directory (and a missing
// parent) is created 0700; a hostile one is refused (ErrUnsafe) before
// anything is written.
func (s *Store) Save(c Credential) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("store credential: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(s.dir), 0o700); err != nil {
		return fmt.Errorf("store credential: %w", err)
	}
	root, err := privdir.Open(s.dir, privdir.RefuseWritable)
	if err != nil {
		return fmt.Errorf("store credential: %w", err)
	}
	defer root.Close()
	b, err := json.MarshalIndent(file{Version: fileVersion, Credential: c}, "", "  ")
	if err != nil {
		return fmt.Errorf("store credential: %w", err)
	}
	tmp, err := writeTemp(root, append(b, '\n'))
	if err != nil {
		return fmt.Errorf("store credential: %w", err)
	}
	if err := root.Rename(tmp, FileName); err != nil {
		_ = root.Remove(tmp)
		return fmt.Errorf("store credential: %w", err)
	}
	if err := syncDir(root); err != nil {
		return fmt.Errorf("store credential: %w", err)
	}
	return nil
}

// writeTemp writes b to a new 0600 file of a random name in root, synced,
// and returns its name. On error nothing is left behind.
func writeTemp(root *os.Root, b []byte) (string, error) {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	name := "." + FileName + ".tmp-" + hex.EncodeToString(rnd[:])
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = root.Remove(name)
		return "", err
	}
	return name, nil
}

func syncDir(root *os.Root) error {
	d, err := root.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Remove deletes the stored credential: ErrNotFound when there is none. A
// hostile directory is refused (ErrUnsafe) and left alone.
func (s *Store) Remove() error {
	root, err := privdir.OpenExisting(s.dir, privdir.RefuseWritable)
	if errors.Is(err, fs.ErrNotExist) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("remove credential: %w", err)
	}
	defer root.Close()
	if err := root.Remove(FileName); errors.Is(err, fs.ErrNotExist) {
		return ErrNotFound
	} else if err != nil {
		return fmt.Errorf("remove credential: %w", err)
	}
	return syncDir(root)
}
