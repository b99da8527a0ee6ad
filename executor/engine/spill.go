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
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/internal/privdir"
)

// ErrUnsafeDir is wrapped when the spill directory, or an owner's directory
// in it, could be controlled by someone else (a symlink, not a directory,
// another owner, group or world writable) or was replaced since it was
// checked. The error also matches privdir.ErrUnsafe.
var ErrUnsafeDir = errors.New("unsafe spill directory")

// spillDir is the daemon-owned directory <StateDir>/spill. It holds one 0700
// directory per owner token and in them 0600 files with complete command
// output. Every path below it is resolved through an os.Root, so a name built
// from an id or owner cannot escape it.
//
// The directory is checked as the sessions directory is (privdir: a real
// directory of this user, writable by no one else) when the engine starts
// and again before every new spill file: the path must still name the
// directory the root holds, because the path is what the model is given and
// what the sandbox binds. A directory refused, or replaced since it was
// opened, is opened again through the same checks; while it is refused, no
// spill file is made (the results say why) and commands still run.
type spillDir struct {
	path string // absolute
	log  *zap.Logger

	mu      sync.Mutex
	root    *os.Root   // the checked directory; nil while refused
	retired []*os.Root // roots of replaced directories, closed by close
	refusal string     // the refusal logged last, so each is logged once
}

// openSpillDir creates <stateDir>/spill when missing and checks it; an
// unsafe directory is logged and left alone, not an error.
func openSpillDir(stateDir string, log *zap.Logger) (*spillDir, error) {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	s := &spillDir{path: filepath.Join(abs, "spill"), log: log}
	_, _ = s.current() // a refusal is logged
	return s, nil
}

// current returns the root of the spill directory once its path is checked
// to still name it, reopening (through the checks) a directory that was
// refused, replaced or removed. A refusal wraps ErrUnsafeDir.
func (s *spillDir) current() (*os.Root, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.root != nil && s.stillOpen() {
		return s.root, nil
	}
	if s.root != nil {
		// Commands may still write through the old root: close it at the end.
		s.retired = append(s.retired, s.root)
		s.root = nil
	}
	root, err := privdir.Open(s.path, privdir.RefuseWritable)
	if err != nil {
		if errors.Is(err, privdir.ErrUnsafe) {
			err = fmt.Errorf("%w: %w", ErrUnsafeDir, err)
		} else {
			err = fmt.Errorf("spill dir: %w", err)
		}
		if msg := err.Error(); msg != s.refusal {
			s.refusal = msg
			s.log.Warn("spill directory refused: no spill files until it is safe", zap.Error(err))
		}
		return nil, err
	}
	if s.refusal != "" {
		s.refusal = ""
		s.log.Info("spill directory usable again", zap.String("path", s.path))
	}
	s.root = root
	return root, nil
}

// stillOpen reports whether the path still names the open, safe root.
// Called with mu held.
func (s *spillDir) stillOpen() bool {
	lst, err := os.Lstat(s.path)
	if err != nil || privdir.Check(s.path, lst, privdir.RefuseWritable) != nil {
		return false
	}
	st, err := s.root.Stat(".")
	return err == nil && os.SameFile(lst, st)
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
// open file (removed through the root it was made in) and its absolute path.
func (s *spillDir) create(owner, base string) (f *localSpill, abs string, err error) {
	root, err := s.current()
	if err != nil {
		return nil, "", err
	}
	dir, err := s.ensureOwner(root, owner)
	if err != nil {
		return nil, "", err
	}
	for attempt := 0; ; attempt++ {
		rel := dir + "/" + base + "-" + randomHex(8) + ".log"
		file, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
		if err == nil {
			return &localSpill{File: file, root: root, rel: rel}, filepath.Join(s.path, filepath.FromSlash(rel)), nil
		}
		if !errors.Is(err, fs.ErrExist) || attempt == 3 {
			return nil, "", fmt.Errorf("spill file: %w", err)
		}
	}
}

// ensureOwner creates (or verifies) owner's 0700 directory in root and
// returns its name relative to the spill root.
func (s *spillDir) ensureOwner(root *os.Root, owner string) (string, error) {
	dir := ownerDirName(owner)
	if err := root.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("spill owner dir: %w", err)
	}
	fi, err := root.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("spill owner dir: %w", err)
	}
	if err := privdir.Check(filepath.Join(s.path, dir), fi, privdir.RefuseWritable); err != nil {
		return "", fmt.Errorf("%w: %w", ErrUnsafeDir, err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := root.Chmod(dir, 0o700); err != nil {
			return "", fmt.Errorf("spill owner dir: %w", err)
		}
	}
	return dir, nil
}

// ownerDir returns the absolute path of owner's directory, creating it.
func (s *spillDir) ownerDir(owner string) (string, error) {
	root, err := s.current()
	if err != nil {
		return "", err
	}
	dir, err := s.ensureOwner(root, owner)
	if err != nil {
		return "", err
	}
	return filepath.Join(s.path, dir), nil
}

// Create implements SpillStore for the local directory.
func (s *spillDir) Create(owner, base string) (SpillFile, string, error) {
	f, abs, err := s.create(owner, base)
	if err != nil {
		return nil, "", err
	}
	return f, abs, nil
}

// localSpill is a spill file under <StateDir>/spill.
type localSpill struct {
	*os.File
	root *os.Root // the directory it was made in, even if replaced since
	rel  string
}

func (f *localSpill) Remove() error { return f.root.Remove(f.rel) }

// sweep removes spill files last modified before cutoff, and owner
// directories left empty. It returns how many files it removed.
func (s *spillDir) sweep(cutoff time.Time) int {
	root, err := s.current()
	if err != nil {
		return 0
	}
	top, err := readDir(root, ".")
	if err != nil {
		return 0
	}
	removed := 0
	for _, e := range top {
		if e.Type().IsDir() {
			entries, _ := readDir(root, e.Name())
			for _, f := range entries {
				removed += removeIfOld(root, e.Name()+"/"+f.Name(), f, cutoff)
			}
			_ = root.Remove(e.Name()) // fails while not empty
			continue
		}
		removed += removeIfOld(root, e.Name(), e, cutoff)
	}
	return removed
}

func removeIfOld(root *os.Root, rel string, e fs.DirEntry, cutoff time.Time) int {
	if e.IsDir() {
		return 0
	}
	fi, err := e.Info()
	if err != nil || !fi.ModTime().Before(cutoff) {
		return 0
	}
	if root.Remove(rel) != nil {
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

// close closes the roots it opened.
func (s *spillDir) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	errs := make([]error, 0, len(s.retired)+1)
	for _, r := range s.retired {
		errs = append(errs, r.Close())
	}
	if s.root != nil {
		errs = append(errs, s.root.Close())
	}
	s.root, s.retired = nil, nil
	return errors.Join(errs...)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails on Linux
	return hex.EncodeToString(b)
}

// RemoveSpills removes owner's spill directory and every file in it (a
// deleted session's output), through the spill root; nil when there is
// none. Spill files a running task of owner still writes are unlinked
// too: the caller kills owner's tasks first (session/delete does).
func (e *Engine) RemoveSpills(owner string) error {
	root, err := e.spills.current()
	if err != nil {
		return err
	}
	if err := root.RemoveAll(ownerDirName(owner)); err != nil {
		return fmt.Errorf("remove spill files of %s: %w", owner, err)
	}
	return nil
}
