// Package privdir opens the directories that hold one user's private files
// (session journals, the stored API key) and the files in them. A directory
// or file that is a symlink, of the wrong kind, owned by another user — or,
// where the caller asks, writable by its group or others — is refused with
// an error matching ErrUnsafe; everything else goes through an os.Root, so a
// name never reaches outside the directory, and the opened directory or file
// is checked to be the one that was inspected.
//
// Known limits: unix only (ownership comes from syscall.Stat_t). The parent
// of the directory is trusted as it is: whoever can rename entries in it can
// swap the directory between two opens, though never under an open Root.
package privdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrUnsafe is matched (errors.Is) by every refusal of this package.
var ErrUnsafe = errors.New("unsafe private storage")

// UnsafeError says which path was refused and why. It matches ErrUnsafe.
type UnsafeError struct {
	Path    string
	Problem string // e.g. "is a symlink"
}

func (e *UnsafeError) Error() string { return e.Path + " " + e.Problem }

// Is makes errors.Is(err, ErrUnsafe) hold.
func (e *UnsafeError) Is(target error) bool { return target == ErrUnsafe }

func unsafe(path, format string, args ...any) error {
	return &UnsafeError{Path: path, Problem: fmt.Sprintf(format, args...)}
}

// Policy is what Open does with an existing directory whose mode is not 0700.
type Policy int

const (
	// Repair sets any mode of this user's directory to 0700.
	Repair Policy = iota
	// RefuseWritable refuses a directory its group or others may write (they
	// may already have planted or swapped a file in it) and sets any other
	// mode to 0700.
	RefuseWritable
)

// Open creates dir (mode 0700; its parent must exist) when missing, checks
// it as OpenExisting does and opens it as a root.
func Open(dir string, p Policy) (*os.Root, error) {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	return OpenExisting(dir, p)
}

// OpenExisting opens an existing dir as a root after checking that it is a
// real directory (not a symlink) owned by this user, the same one it opened,
// and, under RefuseWritable, writable by no one else. It repairs the mode to
// 0700. A missing dir is an error matching fs.ErrNotExist.
func OpenExisting(dir string, p Policy) (*os.Root, error) {
	lst, err := os.Lstat(dir)
	if err != nil {
		return nil, err
	}
	if err := Check(dir, lst, p); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	st, err := root.Stat(".")
	if err == nil && !os.SameFile(lst, st) {
		err = unsafe(dir, "changed while it was opened")
	}
	if err == nil && st.Mode().Perm() != 0o700 {
		err = root.Chmod(".", 0o700)
	}
	if err != nil {
		root.Close()
		return nil, err
	}
	return root, nil
}

// Check refuses fi, what Lstat said of the directory path, unless it is a
// real directory (not a symlink) owned by this user and, under
// RefuseWritable, writable by no one else. The refusal matches ErrUnsafe and
// names path. It never changes anything: a mode to repair is the caller's.
func Check(path string, fi fs.FileInfo, p Policy) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return unsafe(path, "is a symlink")
	case !fi.IsDir():
		return unsafe(path, "is not a directory")
	}
	if err := checkOwner(path, fi); err != nil {
		return err
	}
	if p == RefuseWritable && fi.Mode().Perm()&0o022 != 0 {
		return unsafe(path, "is writable by its group or others (mode %04o)", fi.Mode().Perm())
	}
	return nil
}

// OpenFile opens name in root with flag (no O_CREATE: the file must exist)
// after checking that it is a regular file (not a symlink) owned by this
// user and the same file the name pointed at. It returns the opened file's
// info. A name replaced (renamed over) between the check and the open is
// checked again, a few times, before it counts as unsafe.
func OpenFile(root *os.Root, name string, flag int) (f *os.File, st fs.FileInfo, err error) {
	for try := 0; try < 5; try++ {
		var raced bool
		f, st, raced, err = openChecked(root, name, flag&^os.O_CREATE)
		if !raced {
			return f, st, err
		}
	}
	return nil, nil, err
}

func openChecked(root *os.Root, name string, flag int) (*os.File, fs.FileInfo, bool, error) {
	lst, err := root.Lstat(name)
	if err != nil {
		return nil, nil, false, err
	}
	if !lst.Mode().IsRegular() {
		return nil, nil, false, unsafe(name, "is not a regular file")
	}
	f, err := root.OpenFile(name, flag, 0)
	if err != nil {
		return nil, nil, false, err
	}
	st, err := f.Stat()
	raced := false
	if err == nil && !os.SameFile(lst, st) {
		err, raced = unsafe(name, "changed while it was opened"), true
	}
	if err == nil {
		err = checkOwner(name, st)
	}
	if err != nil {
		f.Close()
		return nil, nil, raced, err
	}
	return f, st, false, nil
}

// CheckOwner fails (ErrUnsafe) unless fi belongs to this process's
// effective user.
func CheckOwner(fi fs.FileInfo) error { return checkOwner(fi.Name(), fi) }
