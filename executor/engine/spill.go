package engine

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// ErrUnsafeDir is wrapped when an existing spill directory could be
// controlled by someone else (a symlink, another owner, group or world
// writable).
var ErrUnsafeDir = errors.New("unsafe spill directory")

// spillDir is the daemon-owned directory <StateDir>/spill. It holds one 0700
// directory per owner token and in them 0600 files with complete command
// output. Every path below it is resolved through an os.Root, so a name built
// from an id or owner cannot escape it.
type spillDir struct {
	root *os.Root
	path string // absolute
	uid  int
}

// openSpillDir creates or verifies <stateDir>/spill.
func openSpillDir(stateDir string) (*spillDir, error) {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	path := filepath.Join(abs, "spill")
	if err := os.Mkdir(path, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("spill dir: %w", err)
	}
	uid := os.Geteuid()
	before, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("spill dir: %w", err)
	}
	if err := checkDir(path, before, uid); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(path)
	if err != nil {
		return nil, fmt.Errorf("spill dir: %w", err)
	}
	// The opened directory must be the one checked (no swap in between).
	after, err := root.Lstat(".")
	if err != nil || !os.SameFile(before, after) {
		root.Close()
		return nil, fmt.Errorf("%w %q: replaced while opening", ErrUnsafeDir, path)
	}
	if before.Mode().Perm()&0o077 != 0 {
		if err := root.Chmod(".", 0o700); err != nil {
			root.Close()
			return nil, fmt.Errorf("spill dir: %w", err)
		}
	}
	return &spillDir{root: root, path: path, uid: uid}, nil
}

// checkDir refuses a directory someone else could control.
func checkDir(path string, fi fs.FileInfo, uid int) error {
	reason := ""
	switch st, _ := fi.Sys().(*syscall.Stat_t); {
	case fi.Mode()&fs.ModeSymlink != 0:
		reason = "is a symlink"
	case !fi.IsDir():
		reason = "is not a directory"
	case st == nil || int(st.Uid) != uid:
		reason = "is owned by another user"
	case fi.Mode().Perm()&0o022 != 0:
		reason = "is group or world writable"
	}
	if reason != "" {
		return fmt.Errorf("%w %q: %s", ErrUnsafeDir, path, reason)
	}
	return nil
}

// ownerDirName maps an owner token to a directory name that is always a
// single safe path element.
func ownerDirName(owner string) string {
	if owner == "" {
		return "unowned"
	}
	safe := len(owner) <= 64
	for i := 0; safe && i < len(owner); i++ {
		c := owner[i]
		safe = isAlnum(c) || c == '-' || c == '_' || c == '.'
	}
	if safe {
		return "o-" + owner
	}
	sum := sha256.Sum256([]byte(owner))
	return "h-" + hex.EncodeToString(sum[:16])
}

// create makes a new spill file for owner named after base (e.g. "bash-3"),
// 0600, O_EXCL|O_NOFOLLOW, in the owner's 0700 directory. It returns the
// open file, its absolute path and its path relative to the spill root.
func (s *spillDir) create(owner, base string) (f *os.File, abs, rel string, err error) {
	dir, err := s.ensureOwner(owner)
	if err != nil {
		return nil, "", "", err
	}
	for attempt := 0; ; attempt++ {
		rel = dir + "/" + base + "-" + randomHex(8) + ".log"
		f, err = s.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
		if err == nil {
			return f, filepath.Join(s.path, filepath.FromSlash(rel)), rel, nil
		}
		if !errors.Is(err, fs.ErrExist) || attempt == 3 {
			return nil, "", "", fmt.Errorf("spill file: %w", err)
		}
	}
}

// ensureOwner creates (or verifies) owner's 0700 directory and returns its
// name relative to the spill root.
func (s *spillDir) ensureOwner(owner string) (string, error) {
	dir := ownerDirName(owner)
	if err := s.root.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("spill owner dir: %w", err)
	}
	fi, err := s.root.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("spill owner dir: %w", err)
	}
	if err := checkDir(filepath.Join(s.path, dir), fi, s.uid); err != nil {
		return "", err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := s.root.Chmod(dir, 0o700); err != nil {
			return "", fmt.Errorf("spill owner dir: %w", err)
		}
	}
	return dir, nil
}

// ownerDir returns the absolute path of owner's directory, creating it.
func (s *spillDir) ownerDir(owner string) (string, error) {
	dir, err := s.ensureOwner(owner)
	if err != nil {
		return "", err
	}
	return filepath.Join(s.path, dir), nil
}

// Create implements SpillStore for the local directory.
func (s *spillDir) Create(owner, base string) (SpillFile, string, error) {
	f, abs, rel, err := s.create(owner, base)
	if err != nil {
		return nil, "", err
	}
	return &localSpill{File: f, dir: s, rel: rel}, abs, nil
}

// localSpill is a spill file under <StateDir>/spill.
type localSpill struct {
	*os.File
	dir *spillDir
	rel string
}

func (f *localSpill) Remove() error { return f.dir.remove(f.rel) }

// remove deletes a spill file given its root-relative path.
func (s *spillDir) remove(rel string) error { return s.root.Remove(rel) }

// sweep removes spill files last modified before cutoff, and owner
// directories left empty. It returns how many files it removed.
func (s *spillDir) sweep(cutoff time.Time) int {
	top, err := readDir(s.root, ".")
	if err != nil {
		return 0
	}
	removed := 0
	for _, e := range top {
		if e.Type().IsDir() {
			entries, _ := readDir(s.root, e.Name())
			for _, f := range entries {
				removed += s.removeIfOld(e.Name()+"/"+f.Name(), f, cutoff)
			}
			_ = s.root.Remove(e.Name()) // fails while not empty
			continue
		}
		removed += s.removeIfOld(e.Name(), e, cutoff)
	}
	return removed
}

func (s *spillDir) removeIfOld(rel string, e fs.DirEntry, cutoff time.Time) int {
	if e.IsDir() {
		return 0
	}
	fi, err := e.Info()
	if err != nil || !fi.ModTime().Before(cutoff) {
		return 0
	}
	if s.root.Remove(rel) != nil {
		return 0
	}
	return 1
}

func readDir(root *os.Root, name string) ([]fs.DirEntry, error) {
	d, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadDir(-1)
}

func (s *spillDir) close() error { return s.root.Close() }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails on Linux
	return hex.EncodeToString(b)
}
